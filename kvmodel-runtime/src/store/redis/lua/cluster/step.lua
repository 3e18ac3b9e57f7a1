-- kvmodel on Redis Cluster: what every step of the cross-slot protocol
-- shares. Each script is this text followed by its own body.
--
-- KEYS: [1] the step's own key (an intent or a token), then the n data keys
-- of one hash slot, their n locks and their n shared holds. ARGV: [1] write
-- id, [2] lease in ms (then, for a test that moved the store's lease clock
-- on, a space and how many ms it is ahead of the server's `TIME`), [3] and
-- [4] step arguments, [5] n, [6] one flag per
-- key (its hold, locks.lua: 'L', 'S', 'I' or '-'), then the conditions
-- (count, then kind, key number, value, batch index each) and the
-- operations (count, then kind, key number, a, b, early flag each),
-- numbered from 1 like the keys.
--
-- Counters, times to live, the batch read from ARGV, conditions and
-- operations: prelude.lua; holds: locks.lua (both prepended).

local W = ARGV[1]
local LEASE, AHEAD
do
  local lease, ahead = string.match(ARGV[2], '^(%d+) ?(%d*)$')
  LEASE, AHEAD = tonumber(lease), tonumber(ahead) or 0
end
local N = tonumber(ARGV[5])
local FLAGS = ARGV[6]
-- A batch that does not write the key of its first condition (a clean-up
-- or repair of a record it leaves alone) never waits for another write:
-- the flags end in '!'.
local NOWAIT = string.sub(FLAGS, N + 1, N + 1) == '!'
local OWN = KEYS[1]

local function key(i) return KEYS[1 + i] end

-- Now on the clock that leases go by: the server's `TIME`, moved on by
-- AHEAD ms (0 outside tests).
local function lease_now() return now_ms() + AHEAD end
local function lock(i) return KEYS[1 + N + i] end
local function share(i) return KEYS[1 + 2 * N + i] end
local function mode(i) return string.sub(FLAGS, i, i) end

-- Conditions and operations, decoded (prelude.lua's `read_batch`).
local conditions, ops = read_batch(7, true)

-- The lock key and value of another write's hold that keeps this write
-- from holding key number i, or nil.
local function conflict_at(i)
  return conflict(key(i), lock(i), share(i), mode(i), W, incs_of(ops, i), ticket_of(W), NOWAIT)
end

-- {-2, lock key, lock value} for the first key of the slot held against
-- this write, or nil.
local function first_conflict()
  for i = 1, N do
    local l, h, _, changes = conflict_at(i)
    if l then return {-2, l, h, changes} end
  end
  return nil
end

-- What decides when another write's hold keeps this step from going on
-- (locks.lua's `busy_of`), or nil.
local function busy()
  return busy_of(N, key, conflict_at, conditions, NOWAIT)
end

-- What keeps this step from writing, or nil: another write's hold
-- (`busy`), then a condition that fails (prelude.lua's
-- `check_conditions`), then, with `validating`, an operation that does not
-- fit (prelude.lua's `validate`).
local function refusal(validating)
  local held = busy()
  if held then return held end
  local failed = check_conditions(conditions, key)
  if failed or not validating then return failed end
  return validate(ops, key)
end

-- Applies one operation that validation accepted (prelude.lua's
-- `apply_op`).
local function apply(op)
  return apply_op(key(op.k), op.kind, op.a, op.b)
end

-- The sum of this write's increments of key number i, in decimal.
local function net_of(i)
  local v = {0, 0}
  for _, inc in ipairs(incs_of(ops, i)) do
    v = add(v, parse_int(inc.a) or {0, 0}) or v
  end
  local hi, lo = v[1], v[2]
  if hi == 0 then return string.format('%d', lo) end
  local sign = ''
  if hi < 0 then sign, hi, lo = '-', -hi, -lo end
  return sign .. string.format('%d', hi) .. string.format('%09d', lo)
end

-- Takes this write's hold on every key (its flag): "write|deadline|intent|
-- token" in the lock of a key held 'L', a field of its shared holds for 'S'
-- and 'I' (locks.lua).
local function take_locks(deadline, intent, token)
  local held = W .. '|' .. deadline .. '|' .. intent .. '|' .. token
  for i = 1, N do
    local m = mode(i)
    if m == 'L' then
      redis.call('SET', lock(i), held)
      drop_claim(share(i), ticket_of(W))
    elseif m == 'S' then
      redis.call('HSET', share(i), W, 'S  ' .. held)
    elseif m == 'I' then
      redis.call('HSET', share(i), W, 'I ' .. net_of(i) .. ' ' .. held)
    end
  end
end

-- Releases the holds of this write among keys 1..n (KEYS laid out for n).
local function release_locks(n)
  for i = 1, n do
    local held = redis.call('GET', KEYS[1 + n + i])
    if held and string.sub(held, 1, #W + 1) == W .. '|' then redis.call('DEL', KEYS[1 + n + i]) end
    redis.call('HDEL', KEYS[1 + 2 * n + i], W)
  end
end
