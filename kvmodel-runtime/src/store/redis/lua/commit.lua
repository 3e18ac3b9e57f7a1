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

-- (prelude.lua, prepended: times to live, the check of a condition, the
-- application of an operation, and behind `library()` counters, the
-- validation of any operation and batches read whole, shared with the
-- cluster's scripts.)

-- The batch is read from ARGV where it lies, in three passes: conditions,
-- validation, writes (the cluster's steps read it with `read_batch`).
-- Keys are numbered from 1 (`whole`) in the order the batch first names
-- them, conditions first: `cmax` is the highest a condition names.
-- (Locals: a global is looked up by name at each use.)
local ARGV, KEYS = ARGV, KEYS
local known, cmax = {}, 0
local c = whole(ARGV[1])
local i = 2
for index = 0, c - 1 do
  local n = whole(ARGV[i + 1])
  if n > cmax then cmax = n end
  local failed = check_condition(ARGV[i], KEYS[n], ARGV[i + 2], index, known)
  if failed then return failed end
  i = i + 3
end
local m = whole(ARGV[i])
local first = i + 1

-- Validation, first in the plain way nearly every batch allows: each key
-- touched by one operation, and only puts, deletes, collection members and
-- increments by one, each key read once for what its operation needs
-- (`TYPE` of a key no condition read, the value of a counter). Anything
-- else, or a doubt, goes to `simulator` (prelude.lua's `library()`), which
-- names what does not fit. A key above `cmax` that no earlier operation
-- touched is above every earlier one's (`top`); `hit` marks the others.
local plain, hit, top = true, {}, cmax
i = first
for _ = 1, m do
  local kind, n, a, b = ARGV[i], whole(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  if n > top then top = n
  elseif n > cmax or hit[n] then plain = false break
  else hit[n] = true end
  local k = KEYS[n]
  if kind == 'p' then
    if b ~= '' and not is_ms(b) then plain = false break end
    if known[k] == nil then
      local t = redis.call('TYPE', k).ok
      if t ~= 'string' and t ~= 'none' then plain = false break end
    end
  elseif kind == 'z' or kind == 'r' then
    local v = known[k]
    if v then plain = false break end
    if v == nil then
      local t = redis.call('TYPE', k).ok
      if t ~= 'zset' and t ~= 'none' then plain = false break end
    end
  elseif kind == 'i' then
    if b ~= '' or (a ~= '1' and a ~= '-1') then plain = false break end
    local v = known[k]
    if v == nil then
      v = redis.pcall('GET', k)
      if type(v) == 'table' then plain = false break end
      known[k] = v
    end
    -- Below 10^15 in magnitude, one more or less is still a 64-bit
    -- counter.
    if v and not (#v <= 15 and (v == '0' or string.find(v, '^%-?[1-9][0-9]*$'))) then
      plain = false break
    end
  elseif kind ~= 'd' then
    plain = false break
  end
  i = i + 4
end

if not plain then
  local fits = library().simulator(known)
  i = first
  for _ = 1, m do
    local k = KEYS[whole(ARGV[i + 1])]
    local reason = fits(k, ARGV[i], ARGV[i + 2], ARGV[i + 3])
    if reason then return {-1, k, reason} end
    i = i + 4
  end
end

-- A feed's key must hold a Stream (or nothing yet): checked before any
-- write, so an append that could not apply refuses the whole batch.
local at = first + 4 * m
if ARGV[at] == '#feed' then
  local j = at + 2
  for _ = 1, tonumber(ARGV[at + 1]) do
    local k = KEYS[tonumber(ARGV[j])]
    local t = redis.call('TYPE', k).ok
    if t ~= 'stream' and t ~= 'none' then
      return {-1, k, 'a change-feed append meets ' .. holds(t)}
    end
    j = j + 3
  end
end

i = first
for _ = 1, m do
  apply_op(KEYS[whole(ARGV[i + 1])], ARGV[i], ARGV[i + 2], ARGV[i + 3])
  i = i + 4
end

-- The change feed entries, in the same script: a Stream entry each, ids
-- on the server's clock, retention exact (prelude.lua's `feed_append`).
-- The section starts with the word `#feed` (what follows the operations
-- otherwise is the end of ARGV, or the cluster's arguments).
if ARGV[i] == '#feed' then
  local appends = tonumber(ARGV[i + 1])
  i = i + 2
  for _ = 1, appends do
    feed_append(KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
    i = i + 3
  end
end
return {1}
