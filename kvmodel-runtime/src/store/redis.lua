-- kvmodel atomic commit.
-- KEYS: every key the batch touches. ARGV: condition count, then 3 fields per
-- condition (kind, key index, value); operation count, then 4 fields per
-- operation (kind, key index, a, b).
-- Phase 1 checks every condition; phase 2 validates every operation with
-- exactly the rules of `kvmodel_runtime::store::check`, which include every
-- check the following command makes; only phase 3 writes, with commands that
-- cannot fail once phase 2 passed. A failed check writes nothing.

-- (prelude.lua, prepended: counters, times to live, and the validation
-- and application of one operation, shared with the cluster's scripts.)

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
local fits = simulator()
for o = 1, m do
  local kind, key, a, b = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  local reason = fits(key, kind, a, b)
  if reason then return {-1, key, reason} end
end

i = first
for o = 1, m do
  apply_op(KEYS[tonumber(ARGV[i + 1])], ARGV[i], ARGV[i + 2], ARGV[i + 3])
  i = i + 4
end
return {1}
