-- kvmodel on Redis Cluster, a batch within one hash slot: ../commit.lua,
-- or the script written for the batch's shape (../../shape.rs), appended
-- below unchanged, behind the holds of unfinished cross-slot writes
-- (locks.lua, prepended). KEYS: commit.lua's n keys, then their n
-- locks and their n shared holds. The last ARGV is n; the one before it
-- says whether the batch may wait ('1': it does not write the key of its
-- first condition, a clean-up or repair, and fails a condition on a held
-- key at once instead); the one before that holds each key's mode and the
-- one before that the commit's ticket (locks.lua). The rest is
-- commit.lua's (prelude.lua's `read_plan` reads it): ARGV[1] the plan,
-- then the values its kinds take. A held key is met as locks.lua's
-- `busy_of` says.
do
  local n = tonumber(ARGV[#ARGV])
  local modes, ticket, nowait = ARGV[#ARGV - 2], ARGV[#ARGV - 3], ARGV[#ARGV - 1] == '1'
  local conditions, ops = read_plan(1)
  local function key_of(i) return KEYS[i] end
  local function conflict_of(i)
    return conflict(KEYS[i], KEYS[n + i], KEYS[2 * n + i], string.sub(modes, i, i), nil, incs_of(ops, i), ticket, nowait)
  end
  local held = busy_of(n, key_of, conflict_of, conditions, nowait)
  if held then return held end
  -- Its turn has come: a claim it left while waiting goes.
  for i = 1, n do
    if string.sub(modes, i, i) == 'L' then drop_claim(KEYS[2 * n + i], ticket) end
  end
end
