-- kvmodel atomic commit.
-- KEYS: every key the batch touches. ARGV: condition count, then 3 fields per
-- condition (kind, key index, value); operation count, then 4 fields per
-- operation (kind, key index, a, b).
-- Phase 1 checks every condition; phase 2 validates every operation with
-- exactly the rules of `kvmodel_runtime::store::check`, which include every
-- check the following command makes; only phase 3 writes, with commands that
-- cannot fail once phase 2 passed. A failed check writes nothing.

-- Counters follow the one rule of `kvmodel_runtime::batch`: a canonical
-- decimal i64 (what INCRBY accepts), sums within 64 bits. Lua numbers are
-- doubles, so a counter is held exactly as {hi, lo}: hi * 10^9 + lo, both
-- with the value's sign.
local BASE = 1000000000
local MAX_HI, MAX_LO, MIN_LO = 9223372036, 854775807, -854775808

local function fits(hi, lo)
  if hi > MAX_HI or hi < -MAX_HI then return false end
  if hi == MAX_HI then return lo <= MAX_LO end
  if hi == -MAX_HI then return lo >= MIN_LO end
  return true
end

local function parse_int(s)
  if s == '0' then return {0, 0} end
  local sign, digits = string.match(s, '^(%-?)([1-9][0-9]*)$')
  if digits == nil or #digits > 19 then return nil end
  local n = #digits
  local hi = 0
  if n > 9 then hi = tonumber(string.sub(digits, 1, n - 9)) end
  local lo = tonumber(string.sub(digits, math.max(n - 8, 1)))
  if sign == '-' then hi, lo = -hi, -lo end
  if not fits(hi, lo) then return nil end
  return {hi, lo}
end

local function add(a, b)
  local hi, lo = a[1] + b[1], a[2] + b[2]
  if lo >= BASE then hi, lo = hi + 1, lo - BASE
  elseif lo <= -BASE then hi, lo = hi - 1, lo + BASE end
  if hi > 0 and lo < 0 then hi, lo = hi - 1, lo + BASE
  elseif hi < 0 and lo > 0 then hi, lo = hi + 1, lo - BASE end
  if fits(hi, lo) then return {hi, lo} end
  return nil
end

-- A time to live in milliseconds, as kvmodel sends it: 1 to 13 digits, no
-- leading zero (at most ~317 years, so SET PX and PEXPIRE never overflow).
local function is_ms(s)
  return string.match(s, '^[1-9][0-9]*$') ~= nil and #s <= 13
end

local function holds(t)
  if t == 'zset' then return 'a sorted collection' end
  return 'a Redis ' .. t
end

local n = tonumber(ARGV[1])
local i = 2
for c = 1, n do
  local kind, key, want = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2]
  i = i + 3
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= 'string' then
    return {-1, key, 'a condition inspects a key that holds ' .. holds(t)}
  end
  local cur = redis.call('GET', key)
  if kind == 'a' then
    if cur then return {0, c - 1} end
  elseif kind == 'e' then
    if cur ~= want then return {0, c - 1} end
  elseif kind == 'o' then
    if cur and cur ~= want then return {0, c - 1} end
  else
    return {-1, key, 'unknown condition ' .. kind}
  end
end

local m = tonumber(ARGV[i])
i = i + 1
local first = i
-- What each key will hold: {'none'}, {'int', {hi, lo}}, {'str'}, {'zset'},
-- or {t} for another Redis type t.
local state = {}
local function value_state(v)
  local x = parse_int(v)
  if x then return {'int', x} end
  return {'str'}
end
local function current(key)
  if state[key] == nil then
    local t = redis.call('TYPE', key).ok
    if t == 'string' then
      state[key] = value_state(redis.call('GET', key))
    else
      state[key] = {t}
    end
  end
  return state[key]
end
local function is_value(s) return s[1] == 'none' or s[1] == 'int' or s[1] == 'str' end
for o = 1, m do
  local kind, key, a, b = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  if kind == 'p' then
    if b ~= '' and not is_ms(b) then
      return {-1, key, 'the time to live ' .. b .. ' is not a whole number of milliseconds'}
    end
    local s = current(key)
    if not is_value(s) then
      if s[1] == 'zset' then return {-1, key, 'a put meets a sorted collection; delete it first'} end
      return {-1, key, 'a put meets ' .. holds(s[1])}
    end
    state[key] = value_state(a)
  elseif kind == 'd' then
    state[key] = {'none'}
  elseif kind == 'i' then
    local d = parse_int(a)
    if d == nil then return {-1, key, 'the increment ' .. a .. ' is not a 64-bit integer'} end
    local s = current(key)
    local v
    if s[1] == 'none' then v = {0, 0}
    elseif s[1] == 'int' then v = s[2]
    elseif s[1] == 'str' then
      return {-1, key, 'it holds a value that is not a 64-bit decimal integer counter'}
    elseif s[1] == 'zset' then
      return {-1, key, 'an increment meets a sorted collection, not a counter'}
    else
      return {-1, key, 'an increment meets ' .. holds(s[1])}
    end
    local sum = add(v, d)
    if sum == nil then
      return {-1, key, 'adding ' .. a .. ' would overflow the 64-bit counter'}
    end
    state[key] = {'int', sum}
  elseif kind == 'z' or kind == 'r' or kind == 't' then
    if kind == 't' and string.match(a, '^[0-9]+$') == nil then
      return {-1, key, 'the number of members to keep, ' .. a .. ', is not a whole number'}
    end
    local s = current(key)
    if s[1] == 'int' or s[1] == 'str' then
      return {-1, key, 'a sorted-collection operation meets a value'}
    elseif s[1] ~= 'none' and s[1] ~= 'zset' then
      return {-1, key, 'a sorted-collection operation meets ' .. holds(s[1])}
    end
    if kind == 'z' then state[key] = {'zset'} end
  elseif kind == 'x' then
    if not is_ms(a) then
      return {-1, key, 'the time to live ' .. a .. ' is not a whole number of milliseconds'}
    end
  else
    return {-1, key, 'unknown operation ' .. kind}
  end
end

i = first
for o = 1, m do
  local kind, key, a, b = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  if kind == 'p' then
    if b ~= '' then redis.call('SET', key, a, 'PX', b) else redis.call('SET', key, a) end
  elseif kind == 'd' then
    -- UNLINK, never DEL: a big collection is freed in the background
    -- instead of blocking the server (a small value is freed at once).
    redis.call('UNLINK', key)
  elseif kind == 'i' then
    redis.call('INCRBY', key, a)
  elseif kind == 'z' then
    redis.call('ZADD', key, 0, a)
  elseif kind == 'r' then
    redis.call('ZREM', key, a)
  elseif kind == 't' then
    -- Members are ranked in byte order (score 0): all but the greatest
    -- `a` go, lowest first.
    redis.call('ZREMRANGEBYRANK', key, 0, -(tonumber(a) + 1))
  else
    redis.call('PEXPIRE', key, a)
  end
end
return {1}
