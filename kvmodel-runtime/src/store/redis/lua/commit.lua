-- kvmodel atomic commit of a batch, in one step: a server's commit, and a
-- cluster's batch within one hash slot (behind cluster/single.lua).
-- KEYS: every key the batch touches. ARGV: condition count, then 3 fields per
-- condition (kind, key number, value); operation count, then 4 fields per
-- operation (kind, key number, a, b); then, when the batch appends to change
-- feeds, the word `#feed`, the append count and 3 fields per append (stream key number,
-- retention in ms, entry).
-- Phase 1 checks every condition; phase 2 validates every operation with
-- exactly the rules of `kvmodel_runtime::store::check`, which include every
-- check the following command makes; only phase 3 writes, with commands that
-- cannot fail once phase 2 passed. A failed check writes nothing.

-- (prelude.lua, prepended: counters, times to live, the batch read from
-- ARGV, the check of its conditions, the validation of its operations and
-- the application of one, shared with the cluster's scripts.)

-- The batch is read from ARGV where it lies, in three passes: conditions,
-- validation, writes (the cluster's steps read it with `read_batch`).
local known = {}
local i = 2
for index = 0, tonumber(ARGV[1]) - 1 do
  local failed = check_condition(ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], index, known)
  if failed then return failed end
  i = i + 3
end

local m = tonumber(ARGV[i])
local first = i + 1
local fits = simulator(known)
i = first
for _ = 1, m do
  local k = KEYS[tonumber(ARGV[i + 1])]
  local reason = fits(k, ARGV[i], ARGV[i + 2], ARGV[i + 3])
  if reason then return {-1, k, reason} end
  i = i + 4
end

i = first
for _ = 1, m do
  apply_op(KEYS[tonumber(ARGV[i + 1])], ARGV[i], ARGV[i + 2], ARGV[i + 3])
  i = i + 4
end

-- The change feed entries, in the same script: a Stream entry each, ids
-- on the server's clock. Entries older than the retention are trimmed
-- exactly, and the newest trimmed id is recorded as the stream's
-- max-deleted-entry-id (`XSETID`), so a reader behind it is told so.
-- The section starts with the word `#feed` (what follows the operations
-- otherwise is the end of ARGV, or the cluster's arguments).
if ARGV[i] == '#feed' then
  local appends = tonumber(ARGV[i + 1])
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  i = i + 2
  for _ = 1, appends do
    local k = KEYS[tonumber(ARGV[i])]
    local id = redis.call('XADD', k, '*', 'e', ARGV[i + 2])
    local minid = string.format('%d', math.max(0, now - tonumber(ARGV[i + 1])))
    local oldest = redis.call('XRANGE', k, '-', '+', 'COUNT', 1)[1]
    if oldest and tonumber(string.match(oldest[1], '^(%d+)')) < tonumber(minid) then
      local newest_old = redis.call('XREVRANGE', k, '(' .. minid .. '-0', '-', 'COUNT', 1)[1]
      redis.call('XTRIM', k, 'MINID', minid)
      redis.call('XSETID', k, id, 'MAXDELETEDID', newest_old[1])
    end
    i = i + 3
  end
end
return {1}
