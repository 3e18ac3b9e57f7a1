
-- Step 1 taken back in another slot, for a write that never commits: early
-- operations undone in reverse order, locks released, token removed.
if redis.call('HGET', OWN, 'w') ~= W then return {0} end
local undo = cmsgpack.unpack(redis.call('HGET', OWN, 'undo'))
for j = #undo, 1, -1 do
  local u = undo[j]
  local k = key(u[2])
  if u[1] == 'p' then
    if u[3] then
      redis.call('SET', k, u[3])
      if tonumber(u[4]) > 0 then redis.call('PEXPIRE', k, u[4]) end
    else
      redis.call('UNLINK', k)
    end
  else
    redis.call('ZREM', k, u[3])
  end
end
release_locks(N)
redis.call('DEL', OWN)
return {1}
