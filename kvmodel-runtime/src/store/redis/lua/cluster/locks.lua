-- kvmodel on Redis Cluster: the holds of unfinished cross-slot writes on a
-- key, as every script that writes sees them (a batch within one slot and
-- every step of the cross-slot protocol start with this text, after
-- ../prelude.lua).
--
-- A write holds each key it touches in one of three modes (a flag per key):
--   'L' exclusive: it puts or deletes the key, or both conditions on and
--       increments it. The string `kvmodel~lock:{tag}:key` holds
--       "write|deadline|intent|token".
--   'S' shared, to read: it only conditions on the key. Other readers may
--       hold it too; nobody may change it meanwhile.
--   'I' shared, to add: it only increments the key. Other adders may hold
--       it too (increments commute); nobody may read it in a condition or
--       replace it meanwhile.
--   '-' none: it only adds or removes collection members, sets a time to
--       live, or appends to a change feed (a Stream: appends of concurrent
--       writes go on side by side); only an exclusive hold keeps it
--       waiting.
-- Shared holds live in the hash `kvmodel~share:{tag}:key`, one field per
-- write: "S  held" or "I net held" (net: the sum of the write's increments
-- of the key, so that adders together never pass what a counter holds).
--
-- A write that wants a key exclusively while others share it *claims* it
-- (field '!': "! expiry ticket"), so that no new reader or adder joins
-- until it has had its turn: a stream of readers never starves a writer.
-- The ticket is the same for every attempt of one commit (the first 16
-- characters of its write ids); a claim not renewed lapses after CLAIM ms.

local CLAIM = 500

-- What the cluster's scripts use of prelude.lua's `library()`.
local parse_int, add, beyond, simulator, read_batch, read_plan, check_conditions, validate
do
  local lib = library()
  parse_int, add, beyond, simulator = lib.parse_int, lib.add, lib.beyond, lib.simulator
  read_batch, read_plan = lib.read_batch, lib.read_plan
  check_conditions, validate = lib.check_conditions, lib.validate
end

-- The increments {a, b} among `ops` (a batch's operations, as prelude.lua's
-- `read_batch` and `read_plan` give them) of key number i, in batch order.
local function incs_of(ops, i)
  local out = {}
  for _, op in ipairs(ops) do
    if op.k == i and op.kind == 'i' then out[#out + 1] = {a = op.a, b = op.b} end
  end
  return out
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The ticket of write id `w` (nil for none).
local function ticket_of(w)
  if w == nil then return nil end
  return string.sub(w, 1, 16)
end

-- Removes the claim on `share_key` if `ticket` made it.
local function drop_claim(share_key, ticket)
  local c = redis.call('HGET', share_key, '!')
  if c and ticket and string.sub(c, -#ticket - 1) == ' ' .. ticket then
    redis.call('HDEL', share_key, '!')
  end
end

-- The shared holds on `share_key` of writes other than `w` (every write
-- when `w` is nil): {m = mode, net = increment, held = lock value}.
local function holds_of(share_key, w)
  local all = redis.call('HGETALL', share_key)
  local out = {}
  for j = 1, #all, 2 do
    if all[j] ~= w and all[j] ~= '!' then
      local m, net, held = string.match(all[j + 1], '^(.) (%-?%d*) (.*)$')
      if m then out[#out + 1] = {m = m, net = net, held = held} end
    end
  end
  return out
end

-- The lock value of the first adder in `holds` whose increment, together
-- with the others', could take `data_key` past what its counter holds (or
-- a shard past its limit) once `incs` (this write's increments {a, b}) are
-- added, in whichever order and whichever of them commit; nil when every
-- outcome fits. Which key value does not fit at all is validation's
-- concern, not this.
local function adders_conflict(data_key, holds, incs)
  local pos, neg, first = {0, 0}, {0, 0}, nil
  for _, h in ipairs(holds) do
    if h.m == 'I' then
      first = first or h.held
      local d = parse_int(h.net)
      if d then
        if d[1] > 0 or d[2] > 0 then pos = add(pos, d) else neg = add(neg, d) end
        if pos == nil or neg == nil then return first end
      end
    end
  end
  if first == nil or #incs == 0 then return nil end
  local t = redis.call('TYPE', data_key).ok
  local cur = {0, 0}
  if t == 'string' then cur = parse_int(redis.call('GET', data_key)) elseif t ~= 'none' then return nil end
  if cur == nil then return nil end
  for _, extra in ipairs({pos, neg}) do
    local v = add(cur, extra)
    if v == nil then return first end
    for _, inc in ipairs(incs) do
      local d = parse_int(inc.a)
      if d == nil then return nil end
      local sum = add(v, d)
      if sum == nil or beyond(v, sum, inc.a, inc.b) then return first end
      v = sum
    end
  end
  return nil
end

-- What keeps a write holding `data_key` in mode `m` (with increments
-- `incs`) from going on, or nil: the lock key and lock value of another
-- write's hold (or '!' for a claim), whether that holder may change the key
-- outside its commit point (its lock value names a token: it puts, deletes
-- or adds in a slot other than its record's), and whether it changes the
-- key at all ('1') or only reads it or waits for its turn ('0'). `w` is
-- this write's id (nil for a batch within one slot, which holds nothing),
-- `ticket` its commit's ticket; a write that may wait claims a key it wants
-- exclusively while others share it.
local function conflict(data_key, lock_key, share_key, m, w, incs, ticket, nowait)
  local x = redis.call('GET', lock_key)
  if x and (w == nil or string.sub(x, 1, #w + 1) ~= w .. '|') then
    return lock_key, x, string.sub(x, -1) ~= '|', '1'
  end
  if m ~= 'L' and m ~= 'S' and m ~= 'I' then return nil end
  local claim = redis.call('HGET', share_key, '!')
  if claim then
    local expiry, by = string.match(claim, '^! (%d+) (.*)$')
    if expiry == nil or tonumber(expiry) < now_ms() then
      redis.call('HDEL', share_key, '!')
    elseif by ~= ticket then
      return share_key, '!', false, (m == 'L') and '1' or '0'
    end
  end
  local holds = holds_of(share_key, w)
  for _, h in ipairs(holds) do
    if m == 'L' or h.m ~= m then
      if m == 'L' and not nowait and ticket then
        redis.call('HSET', share_key, '!', '! ' .. (now_ms() + CLAIM) .. ' ' .. ticket)
      end
      local changes = h.m == 'I'
      return share_key, h.held, changes and string.sub(h.held, -1) ~= '|', changes and '1' or '0'
    end
  end
  if m == 'I' then
    local held = adders_conflict(data_key, holds, incs)
    if held then return share_key, held, string.sub(held, -1) ~= '|', '1' end
  end
  return nil
end

-- Whether condition `kind` (with `want`) holds on `k` now; true when `k`
-- holds a collection (validation reports that).
local function holds_now(k, kind, want)
  if redis.call('TYPE', k).ok ~= 'string' and redis.call('EXISTS', k) == 1 then return true end
  return condition_holds(kind, redis.call('GET', k), want)
end

-- What decides when another write's hold keeps this batch from going on,
-- or nil when none does. `n` keys, key number i named `key_of(i)`;
-- `conflict_of(i)` says what holds key number i (`conflict`); `conditions`
-- hold {k, kind, want, index} in batch order; `nowait`: the batch does not
-- write the key of its first condition, and fails any condition on a held
-- key at once. Otherwise conditions on a held key are taken in order: on a
-- key its holder may change outside its commit point, an equality fails at
-- once ({0, batch index, 'held'}: whatever the holder does, a
-- compare-and-set against the value read before it is stale or about to
-- be) and any other waits ({-2, lock key, lock value, changes}); any other
-- condition is checked on the committed value now and fails at once if it
-- does not hold. When every condition holds, the batch waits for the first
-- held key.
local function busy_of(n, key_of, conflict_of, conditions, nowait)
  local first_lock, first_held, first_changes
  for i = 1, n do
    local _
    first_lock, first_held, _, first_changes = conflict_of(i)
    if first_lock then break end
  end
  if not first_lock then return nil end
  if nowait then
    for _, c in ipairs(conditions) do
      if conflict_of(c.k) then return {0, c.index, 'held'} end
    end
  end
  for _, c in ipairs(conditions) do
    local l, h, late, changes = conflict_of(c.k)
    if l and late then
      if c.kind == 'e' then return {0, c.index, 'held'} end
      return {-2, l, h, changes}
    end
    if not holds_now(key_of(c.k), c.kind, c.want) then return {0, c.index, 'held'} end
  end
  return {-2, first_lock, first_held, first_changes}
end
