-- kvmodel atomic commit of a batch, in one step: a server's commit, and a
-- cluster's batch within one hash slot (behind cluster/single.lua).
-- KEYS: every key the batch touches. ARGV: condition count, then 3 fields per
-- condition (kind, key number, value); operation count, then 4 fields per
-- operation (kind, key number, a, b).
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
return {1}
