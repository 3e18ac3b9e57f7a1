
-- Step 1 in the slot of the record: the conditions checked, the keys
-- locked, the intent written (prepared). ARGV[3]: the token groups, ARGV[4]:
-- the locked keys of this slot (both opaque here, read by recovery).
if redis.call('EXISTS', OWN) == 1 then return {-3, 'its write id is taken'} end
local refused = refusal(false)
if refused then return refused end
local deadline = lease_now() + LEASE
take_locks(deadline, OWN, '')
redis.call('HSET', OWN, 'w', W, 'state', 'p', 'deadline', deadline, 'groups', ARGV[3], 'locks', ARGV[4])
return {1}
