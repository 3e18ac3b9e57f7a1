-- kvmodel delete of a record by the plan its last write stored beside it
-- (`Store::delete_plans`): one round trip, where reading the record to
-- learn its entries first would take two.
--
-- KEYS: the record, its plan, and a key that must hold nothing for the
-- plan to apply (the record's link registry: links go the usual way).
-- ARGV[1]: the entity's tag (16 hex digits), the fingerprint of the code
-- that derives its entries. The plan is a MessagePack array: the first 16
-- hex digits of the SHA1 of the record bytes it was written for and the
-- tag it was written with, then commit.lua's KEYS and ARGV for the batch
-- that deletes the record, its entries and the plan. Answers {1} deleted,
-- {2} no record (a plan left without one goes), and {-9} when nothing was
-- written and the caller deletes the usual way: no plan, one written for
-- other bytes (by a writer that keeps none) or with another tag (another
-- schema), the key that must hold nothing holds a value, or commit.lua
-- would hand the batch to its general validation.
local record = redis.pcall('GET', KEYS[1])
if type(record) == 'table' then return {-9} end
if not record then
  redis.call('UNLINK', KEYS[2])
  return {2}
end
local stored = redis.pcall('GET', KEYS[2])
-- (`GET`, not `EXISTS`: the commands a writer's ACL allows.)
if type(stored) ~= 'string' or redis.pcall('GET', KEYS[3]) then return {-9} end
local ok, plan = pcall(cmsgpack.unpack, stored)
if not ok or type(plan) ~= 'table' or type(plan[2]) ~= 'table' or type(plan[3]) ~= 'table'
  or type(plan[3][1]) ~= 'string' or plan[2][1] ~= KEYS[1]
  or plan[1] ~= string.sub(redis.sha1hex(record), 1, 16) .. ARGV[1] then
  return {-9}
end
-- What a plan may hold: no condition, only removals and counter moves
-- (d delete, c delete if it holds, r remove a member, i u v move a
-- counter), the values they take and nothing more, the record and the
-- plan deleted, on keys it names.
do
  local ops, keys, argv = plan[3][1], plan[2], plan[3]
  local byte, p, values, gone = string.byte, 1, 1, 0
  while p <= #ops do
    local kind, n = byte(ops, p), byte(ops, p + 1) or 0
    p = p + 2
    if n >= 192 then n, p = ((n - 192) * 256 + (byte(ops, p) or 0)) * 256 + (byte(ops, p + 1) or 0), p + 2
    elseif n >= 128 then n, p = (n - 128) * 256 + (byte(ops, p) or 0), p + 1 end
    if type(keys[n]) ~= 'string' then return {-9} end
    if kind == 99 or kind == 114 or kind == 105 then values = values + 1
    elseif kind == 100 then
      if keys[n] == KEYS[1] or keys[n] == KEYS[2] then gone = gone + 1 end
    elseif kind ~= 117 and kind ~= 118 then return {-9} end
  end
  if gone ~= 2 or #argv ~= values then return {-9} end
  for i = 2, values do if type(argv[i]) ~= 'string' then return {-9} end end
end
local function general() return {-9} end
local KEYS, ARGV = plan[2], plan[3]
