-- The body of `general(known)` (commit.lua's way for any batch, run when
-- a batch is not ordinary or a command refused it): the batch read whole
-- (prelude.lua's `read_plan`), its conditions checked unless `known`
-- holds what they read (they held), every operation validated with the
-- rules of `kvmodel_runtime::store::check` (prelude.lua's `validate`),
-- and only then written, feed appends last. A failed check writes
-- nothing.
local lib = library()
local conditions, ops = lib.read_plan(1)
local function key_of(n) return KEYS[n] end
if not known then
  known = {}
  local failed = lib.check_conditions(conditions, key_of, known)
  if failed then return failed end
end
local bad = lib.validate(ops, key_of, known)
if bad then return bad end
for _, op in ipairs(ops) do
  if op.kind ~= 'f' then apply_op(KEYS[op.k], op.kind, op.a, op.b) end
end
for _, op in ipairs(ops) do
  if op.kind == 'f' then feed_append(KEYS[op.k], op.b, op.a) end
end
return {1}
