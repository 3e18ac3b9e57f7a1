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

local function key_of(i) return KEYS[i] end

local conditions, ops = read_batch(1, false)
-- What the conditions read, which validation does not read again.
local known = {}
local failed = check_conditions(conditions, key_of, known)
if failed then return failed end

local invalid = validate(ops, key_of, known)
if invalid then return invalid end

for _, op in ipairs(ops) do
  apply_op(key_of(op.k), op.kind, op.a, op.b)
end
return {1}
