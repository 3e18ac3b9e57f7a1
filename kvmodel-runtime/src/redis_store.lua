-- kvmodel atomic commit.
-- KEYS: every key the batch touches. ARGV: condition count, then 3 fields per
-- condition (kind, key index, value); operation count, then 4 fields per
-- operation (kind, key index, a, b).
-- Phase 1 checks every condition; phase 2 validates every operation against
-- the types it will meet; only phase 3 writes. A failed check writes nothing.
local n = tonumber(ARGV[1])
local i = 2
for c = 1, n do
  local kind, key, want = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2]
  i = i + 3
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= 'string' then
    return {-1, key, 'a condition inspects a key that holds a ' .. t}
  end
  local cur = redis.call('GET', key)
  if kind == 'a' then
    if cur then return {0, c - 1} end
  elseif kind == 'e' then
    if cur ~= want then return {0, c - 1} end
  else
    if cur and cur ~= want then return {0, c - 1} end
  end
end

local m = tonumber(ARGV[i])
i = i + 1
local first = i
local state = {}
local function is_int(s)
  return string.match(s, '^%-?%d+$') ~= nil and string.len(s) <= 20
end
local function current(key)
  if state[key] == nil then
    local t = redis.call('TYPE', key).ok
    if t == 'string' then
      local v = redis.call('GET', key)
      if is_int(v) then state[key] = {'int', tonumber(v)} else state[key] = {'str'} end
    else
      state[key] = {t}
    end
  end
  return state[key]
end
local limit = 9.0e18
for o = 1, m do
  local kind, key, a = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2]
  i = i + 4
  if kind == 'p' then
    if is_int(a) then state[key] = {'int', tonumber(a)} else state[key] = {'str'} end
  elseif kind == 'd' then
    state[key] = {'none'}
  elseif kind == 'i' then
    local s = current(key)
    local v
    if s[1] == 'none' then v = 0 elseif s[1] == 'int' then v = s[2] else
      return {-1, key, 'it holds a value that is not an integer counter'}
    end
    v = v + tonumber(a)
    if v > limit or v < -limit then
      return {-1, key, 'adding ' .. a .. ' would overflow the 64-bit counter'}
    end
    state[key] = {'int', v}
  elseif kind == 'z' or kind == 'r' then
    local s = current(key)
    if s[1] ~= 'none' and s[1] ~= 'zset' then
      return {-1, key, 'a sorted-collection operation meets a key that holds a ' .. s[1]}
    end
    if kind == 'z' then state[key] = {'zset'} end
  end
end

i = first
for o = 1, m do
  local kind, key, a, b = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  if kind == 'p' then
    if b ~= '' then redis.call('SET', key, a, 'PX', b) else redis.call('SET', key, a) end
  elseif kind == 'd' then
    redis.call('DEL', key)
  elseif kind == 'i' then
    redis.call('INCRBY', key, a)
  elseif kind == 'z' then
    redis.call('ZADD', key, 0, a)
  elseif kind == 'r' then
    redis.call('ZREM', key, a)
  elseif kind == 'x' then
    redis.call('PEXPIRE', key, a)
  end
end
return {1}
