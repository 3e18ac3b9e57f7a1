-- kvmodel on Redis Cluster, a batch within one hash slot: redis.lua
-- (appended below, unchanged) behind the locks of unfinished cross-slot
-- writes. KEYS: redis.lua's keys, then their locks in the same order; the
-- last ARGV says how many locks, the one before it whether the batch may
-- wait ('1': it does not write the key of its first condition, a clean-up
-- or repair, and fails a condition on a held key at once instead). When a key is locked, conditions are taken
-- in batch order (redis.lua's encoding: ARGV[1] conditions, then kind, key
-- number, value each), as lib.lua's `busy` takes them: on a key whose lock
-- names a token, an equality fails at once and the others wait; any other
-- is checked against the committed value. If all hold, the batch waits for
-- the first held key.
local kv_locks = tonumber(ARGV[#ARGV])
local kv_base = #KEYS - kv_locks
local kv_first = nil
for kv_i = kv_base + 1, #KEYS do
  local kv_held = redis.call('GET', KEYS[kv_i])
  if kv_held then
    kv_first = {-2, KEYS[kv_i], kv_held}
    break
  end
end
if kv_first then
  if ARGV[#ARGV - 1] == '1' then
    for kv_c = 1, tonumber(ARGV[1]) do
      if redis.call('EXISTS', KEYS[kv_base + tonumber(ARGV[3 * kv_c])]) == 1 then
        return {0, kv_c - 1, 'held'}
      end
    end
  end
  for kv_c = 1, tonumber(ARGV[1]) do
    local kv_kind, kv_k, kv_want = ARGV[3 * kv_c - 1], tonumber(ARGV[3 * kv_c]), ARGV[3 * kv_c + 1]
    local kv_held = redis.call('GET', KEYS[kv_base + kv_k])
    if kv_held and string.sub(kv_held, -1) ~= '|' then
      if kv_kind == 'e' then return {0, kv_c - 1, 'held'} end
      return {-2, KEYS[kv_base + kv_k], kv_held}
    end
    local kv_key = KEYS[kv_k]
    if redis.call('TYPE', kv_key).ok == 'string' or redis.call('EXISTS', kv_key) == 0 then
      local kv_cur = redis.call('GET', kv_key)
      if (kv_kind == 'a' and kv_cur) or (kv_kind == 'e' and kv_cur ~= kv_want)
          or (kv_kind == 'o' and kv_cur and kv_cur ~= kv_want) or (kv_kind == 'p' and not kv_cur) then
        return {0, kv_c - 1, 'held'}
      end
    end
  end
  return kv_first
end
