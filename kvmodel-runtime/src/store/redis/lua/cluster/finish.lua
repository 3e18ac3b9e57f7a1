
-- Step 4 in the slot of the record: the write is over. ARGV[3]: 'c' (it
-- committed and every effect is applied: the intent goes), 'd' (its writer
-- drops it before the commit point: the intent goes unless committed) or
-- 'a' (aborted: the intent stays as a tombstone). Its locks are released.
local state = redis.call('HMGET', OWN, 'w', 'state')
if state[1] == W then
  if (ARGV[3] == 'c' and state[2] == 'c') or (ARGV[3] == 'd' and state[2] ~= 'c') then
    redis.call('DEL', OWN)
  end
  if ARGV[3] == 'd' and state[2] == 'c' then return {0} end
end
release_locks(N)
return {1}
