-- kvmodel atomic commit.
-- KEYS: every key the batch touches. ARGV: condition count, then 3 fields per
-- condition (kind, key index, value); operation count, then 4 fields per
-- operation (kind, key index, a, b).
-- Phase 1 checks every condition; phase 2 validates every operation with
-- exactly the rules of `kvmodel_runtime::store::check`, which include every
-- check the following command makes; only phase 3 writes, with commands that
-- cannot fail once phase 2 passed. A failed check writes nothing.

-- (prelude.lua, prepended: counters, times to live.)

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
  elseif kind == 'p' then
    if not cur then return {0, c - 1} end
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
    local problem = beyond(v, sum, a, b)
    if problem then return {-1, key, problem} end
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
