
-- Step 2 in the slot of the record, the commit point: the write's own
-- operations applied and its intent marked committed, or, when nothing
-- remains to apply in other slots (ARGV[3] = '1'), the write ended here.
local st = redis.call('HMGET', OWN, 'w', 'state', 'deadline')
if st[1] ~= W or st[2] ~= 'p' then return {-3, 'it was ' .. (st[2] or 'dropped')} end
if lease_now() > tonumber(st[3]) then return {-3, 'it outlived its lease'} end
local refused = refusal(true)
if refused then return refused end
for _, op in ipairs(ops) do apply(op) end
if ARGV[3] == '1' then
  redis.call('DEL', OWN)
  release_locks(N)
else
  redis.call('HSET', OWN, 'state', 'c', 'deadline', lease_now() + LEASE)
end
return {1}
