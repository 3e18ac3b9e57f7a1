-- kvmodel's change-feed append, the first piece of every script that
-- writes (before prelude.lua, whose `apply_op` uses it; before a shape
-- script that appends).
--
-- Appends `entry` to the change feed (a Stream) at `k`, keeping entries
-- for `retain` ms on this server's clock: the one implementation of a feed
-- append, for commit.lua and shape scripts on a server and within one
-- cluster slot, and for the cluster's operation `f` (an append in another
-- slot, applied once with the rest of its write). Entries older than the
-- retention are trimmed exactly, and the newest trimmed id is recorded as
-- the stream's max-deleted-entry-id (`XSETID`), so a reader behind it is
-- told so.
local function feed_append(k, retain, entry)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local id = redis.call('XADD', k, '*', 'e', entry)
  local minid = string.format('%d', math.max(0, now - tonumber(retain)))
  local oldest = redis.call('XRANGE', k, '-', '+', 'COUNT', 1)[1]
  if oldest and tonumber(string.match(oldest[1], '^(%d+)')) < tonumber(minid) then
    local newest_old = redis.call('XREVRANGE', k, '(' .. minid .. '-0', '-', 'COUNT', 1)[1]
    redis.call('XTRIM', k, 'MINID', minid)
    redis.call('XSETID', k, id, 'MAXDELETEDID', newest_old[1])
  end
end
