
-- The fate of write W, read from its intent: 'c' committed (to be
-- finished), 'a' aborted (to be undone), 'p' prepared and within its lease
-- plus ARGV[3] ms (to be waited for; a negative margin aborts it at once).
-- An absent intent becomes an aborted one, so the write can never commit.
-- Aborted intents stay ARGV[4] ms, as tombstones.
local st = redis.call('HMGET', OWN, 'w', 'state', 'deadline', 'groups', 'locks')
if not st[1] then
  redis.call('HSET', OWN, 'w', W, 'state', 'a')
  redis.call('PEXPIRE', OWN, ARGV[4])
  return {'a', '', ''}
end
if st[1] ~= W then return {'x', '', ''} end
if st[2] == 'p' then
  local margin = tonumber(ARGV[3])
  if margin >= 0 and lease_now() <= tonumber(st[3]) + margin then return {'p', st[3], ''} end
  redis.call('HSET', OWN, 'state', 'a')
  redis.call('PEXPIRE', OWN, ARGV[4])
  return {'a', st[4], st[5]}
end
return {st[2], st[4] or '', st[5] or ''}
