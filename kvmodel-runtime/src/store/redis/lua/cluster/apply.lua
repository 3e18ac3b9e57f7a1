
-- Step 3 in another slot: the operations left for after the commit point
-- (change-feed appends, `f`, among them), applied once (the token goes
-- with them); one that no longer fits its key is skipped and counted.
if redis.call('HGET', OWN, 'w') ~= W then return {0, 0} end
local late = cmsgpack.unpack(redis.call('HGET', OWN, 'late'))
local fits = simulator()
local skipped = 0
for _, t in ipairs(late) do
  local op = {kind = t[1], k = t[2], a = t[3], b = t[4]}
  if fits(key(op.k), op.kind, op.a, op.b) then skipped = skipped + 1 else apply(op) end
end
for _, r in ipairs(cmsgpack.unpack(redis.call('HGET', OWN, 'renew'))) do
  redis.call('PEXPIRE', key(r[1]), r[2])
end
release_locks(N)
redis.call('DEL', OWN)
return {1, skipped}
