
-- Step 1 in a slot the write only adds collection members to: they are
-- added at once, and which were new is returned (for an abort). No token:
-- a member whose write never commits is stale, and readers see through it.
local held = first_conflict()
if held then return held end
local invalid = validate(ops, key)
if invalid then return invalid end
local added = {}
for _, op in ipairs(ops) do added[#added + 1] = tostring(apply(op)) end
return {1, table.concat(added)}
