
-- Step 1 in another slot: the conditions checked, every operation
-- validated, the early ones applied (with what undoes them), the keys
-- locked and the token written. ARGV[3]: the intent key, ARGV[4]: the KEYS
-- of this token (opaque here, read by recovery). An early put with a time
-- to live gets the lease on top, and its own time to live again when the
-- write is applied (after the record's), so it never expires before the
-- record it claims for.
if redis.call('EXISTS', OWN) == 1 then return {-3, 'its write id is taken'} end
local refused = refusal(true)
if refused then return refused end
local undo, late, renew, touched = {}, {}, {}, {}
for _, op in ipairs(ops) do
  if op.kind == 'c' and not touched[op.k] then
    -- A conditional delete is decided now: the key stays locked until the
    -- write is applied or undone, and what is kept is a plain delete (or
    -- nothing), which step 3 of every version applies.
    if redis.call('GET', key(op.k)) == op.a then late[#late + 1] = {'d', op.k, '', ''} end
  elseif op.early and op.kind == 'p' then
    local k = key(op.k)
    local old = redis.call('GET', k)
    if old then
      undo[#undo + 1] = {'p', op.k, old, redis.call('PTTL', k)}
    else
      undo[#undo + 1] = {'p', op.k}
    end
    if op.b ~= '' then
      renew[#renew + 1] = {op.k, op.b}
      redis.call('SET', k, op.a, 'PX', tonumber(op.b) + LEASE)
    else
      apply(op)
    end
  elseif op.early and op.kind == 'z' then
    if apply(op) == 1 then undo[#undo + 1] = {'z', op.k, op.a} end
  else
    late[#late + 1] = {op.kind, op.k, op.a, op.b}
  end
  touched[op.k] = true
end
local deadline = lease_now() + LEASE
take_locks(deadline, ARGV[3], OWN)
redis.call('HSET', OWN, 'w', W, 'intent', ARGV[3], 'deadline', deadline, 'keys', ARGV[4],
  'late', cmsgpack.pack(late), 'undo', cmsgpack.pack(undo), 'renew', cmsgpack.pack(renew))
return {1}
