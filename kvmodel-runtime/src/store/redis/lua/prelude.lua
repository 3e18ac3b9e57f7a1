-- What every kvmodel script that writes shares (commit.lua, on a server
-- and within one cluster slot, and each step of the cluster's cross-slot
-- protocol start with this text): the checks of a time to live, the
-- application (`apply_op`) of one operation (a change-feed append among
-- them, with feed.lua's `feed_append`, which comes first), key numbers (`whole`), the
-- check of one condition (`check_condition`); and, behind `library()`,
-- exact counter arithmetic, the validation (`simulator`) of an operation,
-- a batch read from ARGV (`read_batch`), the check of its conditions
-- (`check_conditions`) and the validation of its operations (`validate`).
--
-- A script pays for every function it defines on every run (Redis runs
-- the whole text each time), so what a server's commit needs only when a
-- batch is out of the ordinary is defined when `library()` is called.

-- A time to live in milliseconds, as kvmodel sends it: 1 to 13 digits, no
-- leading zero (at most ~317 years, so SET PX and PEXPIRE never overflow).
local function is_ms(s)
  return string.match(s, '^[1-9][0-9]*$') ~= nil and #s <= 13
end

local function holds(t)
  if t == 'zset' then return 'a sorted collection' end
  return 'a Redis ' .. t
end

-- Applies one operation that validation accepted, to key `k`, with
-- commands that cannot fail then; for a member added, whether it was new
-- (1) or there already (0).
local function apply_op(k, kind, a, b)
  if kind == 'p' then
    if b ~= '' then redis.call('SET', k, a, 'PX', b) else redis.call('SET', k, a) end
  elseif kind == 'd' then
    -- UNLINK, never DEL: a big collection is freed in the background
    -- instead of blocking the server (a small value is freed at once).
    redis.call('UNLINK', k)
  elseif kind == 'c' then
    -- Only a value that is `a` goes: another record's claim stays.
    if redis.call('GET', k) == a then redis.call('UNLINK', k) end
  elseif kind == 'i' then
    redis.call('INCRBY', k, a)
  elseif kind == 'z' then
    return redis.call('ZADD', k, '0', a)
  elseif kind == 'r' then
    redis.call('ZREM', k, a)
  elseif kind == 't' then
    -- Members are ranked in byte order (score 0): all but the greatest
    -- `a` go, lowest first.
    redis.call('ZREMRANGEBYRANK', k, 0, -(tonumber(a) + 1))
  elseif kind == 'f' then
    feed_append(k, b, a)
  else
    redis.call('PEXPIRE', k, a)
  end
  return 0
end

-- The whole number `n` (decimal text, as key numbers and counts are
-- sent): up to two digits without `tonumber`, which costs more than the
-- rest of a step of a commit.
local byte = string.byte
local function whole(n)
  local a, b = byte(n, 1, 2)
  if #n == 1 then return a - 48 end
  if #n == 2 then return (a - 48) * 10 + b - 48 end
  return tonumber(n)
end

-- Whether condition `kind` (with `want`) holds on `cur`, the value of its
-- key (false when it has none); an unknown kind holds.
local function condition_holds(kind, cur, want)
  return not ((kind == 'a' and cur) or (kind == 'e' and cur ~= want)
    or (kind == 'o' and cur and cur ~= want) or (kind == 'p' and not cur))
end

-- One condition of kind `kind` on key `k` with `want`, its index in the
-- batch being `index`: nil when it holds; {0, index} when it fails;
-- {-1, k, reason} when it cannot be checked (the key holds a collection,
-- or the kind is unknown). The key is read with one `GET` (`TYPE` only
-- when that fails: the key holds no value); with `known`, the value read
-- is kept there (false for none) for validation.
local CONDITIONS = {a = true, e = true, o = true, p = true}
local function check_condition(kind, k, want, index, known)
  local cur = redis.pcall('GET', k)
  if type(cur) == 'table' then
    return {-1, k, 'a condition inspects a key that holds ' .. holds(redis.call('TYPE', k).ok)}
  end
  if not CONDITIONS[kind] then return {-1, k, 'unknown condition ' .. kind} end
  if known then known[k] = cur end
  if not condition_holds(kind, cur, want) then return {0, index} end
  return nil
end

-- Counter arithmetic, validation and batches read whole: a table of
-- `parse_int`, `add`, `beyond`, `simulator`, `read_batch`,
-- `check_conditions` and `validate`, defined on each call.
local function library()
  -- Counters follow the one rule of `kvmodel_runtime::batch`: a canonical
  -- decimal i64 (what INCRBY accepts), sums within 64 bits. Lua numbers are
  -- doubles, so a counter is held exactly as {hi, lo}: hi * 10^9 + lo, both
  -- with the value's sign.
  local BASE = 1000000000
  local MAX_HI, MAX_LO, MIN_LO = 9223372036, 854775807, -854775808

  local function fits(hi, lo)
    if hi > MAX_HI or hi < -MAX_HI then return false end
    if hi == MAX_HI then return lo <= MAX_LO end
    if hi == -MAX_HI then return lo >= MIN_LO end
    return true
  end

  local function parse_int(s)
    -- Up to 9 digits (most counters and increments): one number, no
    -- captures.
    if #s <= 10 and string.find(s, '^%-?[1-9][0-9]*$') and (#s <= 9 or string.byte(s, 1) == 45) then
      return {0, tonumber(s)}
    end
    if s == '0' then return {0, 0} end
    local sign, digits = string.match(s, '^(%-?)([1-9][0-9]*)$')
    if digits == nil or #digits > 19 then return nil end
    local n = #digits
    local hi = 0
    if n > 9 then hi = tonumber(string.sub(digits, 1, n - 9)) end
    local lo = tonumber(string.sub(digits, math.max(n - 8, 1)))
    if sign == '-' then hi, lo = -hi, -lo end
    if not fits(hi, lo) then return nil end
    return {hi, lo}
  end

  local function add(a, b)
    local hi, lo = a[1] + b[1], a[2] + b[2]
    if lo >= BASE then hi, lo = hi + 1, lo - BASE
    elseif lo <= -BASE then hi, lo = hi - 1, lo + BASE end
    if hi > 0 and lo < 0 then hi, lo = hi - 1, lo + BASE
    elseif hi < 0 and lo > 0 then hi, lo = hi + 1, lo - BASE end
    if fits(hi, lo) then return {hi, lo} end
    return nil
  end

  -- The magnitude of a counter {hi, lo}, as {hi, lo}.
  local function magnitude(v)
    if v[1] < 0 or (v[1] == 0 and v[2] < 0) then return {-v[1], -v[2]} end
    return v
  end

  -- Whether magnitude x is greater than magnitude y.
  local function greater(x, y)
    return x[1] > y[1] or (x[1] == y[1] and x[2] > y[2])
  end

  -- Why the sum `v` of an increment `a` to the counter `cur` leaves the
  -- limit `b` (a shard of a sharded counter: '' for none, else a positive
  -- decimal i64) further than `cur` was, or nil.
  local function beyond(cur, v, a, b)
    if b == nil or b == '' then return nil end
    local lim = parse_int(b)
    if lim == nil or lim[1] < 0 or lim[2] < 0 then return 'the limit ' .. b .. ' is not a positive 64-bit integer' end
    local m = magnitude(v)
    if not greater(m, lim) or not greater(m, magnitude(cur)) then return nil end
    return 'adding ' .. a .. ' would take this shard of a sharded counter beyond ±' .. b ..
      ', its share of what a 64-bit total holds, so the total could no longer be read; nothing was written'
  end

  -- Validation with exactly the rules of `kvmodel_runtime::store::check`
  -- (which include every check the command that applies an operation makes):
  -- a function `fits(k, kind, a, b)` that returns nil when the operation fits
  -- what key `k` will hold by then (and records its effect), otherwise why it
  -- does not. What a key holds: NONE, {'int', {hi, lo}} or {'num', n} (a
  -- counter; n a number within ±2^53), STR (a value that is not a counter),
  -- {'raw', v} (the value v, not parsed yet), STRING (a value not read yet),
  -- MAYBE (nothing, or the value it held: after a conditional delete),
  -- ZSET, or {t} for another Redis type t.
  --
  -- Only what an operation needs is read, once per key: a put or a
  -- sorted-collection operation the key's type (`TYPE`), an increment its
  -- value (`GET`; `TYPE` only when that fails). `known` (optional, from
  -- `check_conditions`) holds the value each condition read (false for none):
  -- those keys are not read again.
  local NONE, STR, STRING, ZSET, MAYBE = {'none'}, {'str'}, {'string'}, {'zset'}, {'maybe'}
  local VALUE = {none = true, int = true, num = true, str = true, raw = true, string = true, maybe = true}
  local AFTER_CONDITIONAL = 'an operation that needs to know what the key holds follows a conditional delete of it'
  local function simulator(known)
    local state = {}
    local function of_value(v)
      if not v then return NONE end
      return {'raw', v}
    end
    local function of_type(k)
      local t = redis.call('TYPE', k).ok
      if t == 'string' then return STRING end
      if t == 'none' then return NONE end
      if t == 'zset' then return ZSET end
      return {t}
    end
    -- What key `k` holds, its value not necessarily read.
    local function kind_of(k)
      local s = state[k]
      if s == nil then
        local v = known and known[k]
        if v ~= nil then s = of_value(v) else s = of_type(k) end
        state[k] = s
      end
      return s
    end
    -- What key `k` holds, a value read and parsed.
    local function current(k)
      local s = state[k]
      if s == nil then
        local v = known and known[k]
        if v == nil then
          v = redis.pcall('GET', k)
          if type(v) == 'table' then s = of_type(k) end
        end
        if s == nil then s = of_value(v) end
      elseif s == STRING then
        s = {'raw', redis.call('GET', k)}
      end
      if s[1] == 'raw' then
        local x = parse_int(s[2])
        if x then s = {'int', x} else s = STR end
      elseif s[1] == 'num' then
        local n = s[2]
        local hi = math.floor(math.abs(n) / BASE)
        if n < 0 then hi = -hi end
        s = {'int', {hi, n - hi * BASE}}
      end
      state[k] = s
      return s
    end
    -- The value of key `k` as a number when it is a counter below 10^15 in
    -- magnitude (so a sum with another stays exact in a double) or none (0),
    -- else nil.
    local function small(k)
      local s = state[k]
      if s == nil then
        local v = known and known[k]
        if v == nil then
          v = redis.pcall('GET', k)
          if type(v) == 'table' then state[k] = of_type(k) return nil end
        end
        s = of_value(v)
        state[k] = s
      elseif s == STRING then
        s = {'raw', redis.call('GET', k)}
        state[k] = s
      end
      if s == NONE then return 0 end
      if s[1] == 'num' and math.abs(s[2]) < 1e15 then return s[2] end
      if s[1] == 'raw' and #s[2] <= 15 and (s[2] == '0' or string.find(s[2], '^%-?[1-9][0-9]*$')) then
        return tonumber(s[2])
      end
      return nil
    end
    return function(k, kind, a, b)
      if kind == 'p' then
        if b ~= '' and not is_ms(b) then
          return 'the time to live ' .. b .. ' is not a whole number of milliseconds'
        end
        local s = kind_of(k)
        if not VALUE[s[1]] then
          if s == ZSET then return 'a put meets a sorted collection; delete it first' end
          return 'a put meets ' .. holds(s[1])
        end
        state[k] = {'raw', a}
      elseif kind == 'd' then
        state[k] = NONE
      elseif kind == 'c' then
        local s = kind_of(k)
        if s == ZSET then return 'a conditional delete meets a sorted collection' end
        if not VALUE[s[1]] then return 'a conditional delete meets ' .. holds(s[1]) end
        if s ~= NONE then state[k] = MAYBE end
      elseif kind == 'i' then
        -- Small counters and increments without a limit (nearly all): a sum
        -- of doubles below 2^53 is exact and fits 64 bits.
        if b == '' and #a <= 15 and string.find(a, '^%-?[1-9][0-9]*$') then
          local v = small(k)
          if v then
            state[k] = {'num', v + tonumber(a)}
            return nil
          end
        end
        local d = parse_int(a)
        if d == nil then return 'the increment ' .. a .. ' is not a 64-bit integer' end
        local s = current(k)
        local v
        if s == NONE then v = {0, 0}
        elseif s[1] == 'int' then v = s[2]
        elseif s == STR then return 'it holds a value that is not a 64-bit decimal integer counter'
        elseif s == MAYBE then return AFTER_CONDITIONAL
        elseif s == ZSET then return 'an increment meets a sorted collection, not a counter'
        else return 'an increment meets ' .. holds(s[1]) end
        local sum = add(v, d)
        if sum == nil then return 'adding ' .. a .. ' would overflow the 64-bit counter' end
        local problem = beyond(v, sum, a, b)
        if problem then return problem end
        state[k] = {'int', sum}
      elseif kind == 'z' or kind == 'r' or kind == 't' then
        if kind == 't' and string.match(a, '^[0-9]+$') == nil then
          return 'the number of members to keep, ' .. a .. ', is not a whole number'
        end
        local s = kind_of(k)
        if s == MAYBE then return AFTER_CONDITIONAL end
        if VALUE[s[1]] and s ~= NONE then return 'a sorted-collection operation meets a value' end
        if s ~= NONE and s ~= ZSET then return 'a sorted-collection operation meets ' .. holds(s[1]) end
        if kind == 'z' then state[k] = ZSET end
      elseif kind == 'x' then
        if not is_ms(a) then return 'the time to live ' .. a .. ' is not a whole number of milliseconds' end
      elseif kind == 'f' then
        if not is_ms(b) then return 'the retention ' .. b .. ' is not a whole number of milliseconds' end
        local s = kind_of(k)
        if s ~= NONE and s[1] ~= 'stream' then return 'a change-feed append meets ' .. holds(s[1]) end
        state[k] = {'stream'}
      else
        return 'unknown operation ' .. kind
      end
      return nil
    end
  end

  -- The conditions and operations of a batch, read from ARGV at `at`: a
  -- count, then each condition's kind, key number and value; a count, then
  -- each operation's kind, key number, a and b. Key numbers count from 1.
  -- With `tagged` (the cluster's steps), each condition also carries its
  -- index in the batch and each operation whether it is early ('1');
  -- otherwise a condition's index is its position, from 0. A condition:
  -- {kind, k, want, index}; an operation: {kind, k, a, b, early}.
  local function read_batch(at, tagged)
    local extra = 0
    if tagged then extra = 1 end
    local conditions, ops = {}, {}
    local i = at
    local c = tonumber(ARGV[i]); i = i + 1
    for j = 1, c do
      local index = j - 1
      if tagged then index = tonumber(ARGV[i + 3]) end
      conditions[j] = {kind = ARGV[i], k = tonumber(ARGV[i + 1]), want = ARGV[i + 2], index = index}
      i = i + 3 + extra
    end
    local m = tonumber(ARGV[i]); i = i + 1
    for j = 1, m do
      ops[j] = {kind = ARGV[i], k = tonumber(ARGV[i + 1]), a = ARGV[i + 2], b = ARGV[i + 3],
        early = tagged and ARGV[i + 4] == '1'}
      i = i + 4 + extra
    end
    return conditions, ops
  end

  -- The conditions and operations of commit.lua's plan (ARGV[at]) and the
  -- values after it, as `read_batch` gives them: a condition {kind, k,
  -- want, index}, an operation {kind, k, a, b} with the kinds of the
  -- cluster's steps (u, v, i and l are all `i`; q is `p`). A byte the plan
  -- does not know stands for itself, with no value, for validation to name.
  local PLAN = {A = {'a', 0}, E = {'e', 1}, O = {'o', 1}, P = {'p', 0},
    p = {'p', 1}, q = {'p', 2}, d = {'d', 0}, c = {'c', 1}, u = {'i', 0, '1'}, v = {'i', 0, '-1'},
    i = {'i', 1}, l = {'i', 2}, z = {'z', 1}, r = {'r', 1}, t = {'t', 1}, x = {'x', 1},
    f = {'f', 2}}
  local function read_plan(at)
    local plan = ARGV[at]
    local conditions, ops = {}, {}
    local p, v = 1, at + 1
    while p <= #plan do
      local c = string.sub(plan, p, p)
      local n = string.byte(plan, p + 1) or 0
      p = p + 2
      if n >= 192 then n, p = ((n - 192) * 256 + string.byte(plan, p)) * 256 + string.byte(plan, p + 1), p + 2
      elseif n >= 128 then n, p = (n - 128) * 256 + string.byte(plan, p), p + 1 end
      local shape = PLAN[c] or {c, 0}
      local a, b = shape[3] or '', ''
      if shape[2] >= 1 then a = ARGV[v] end
      -- A time to live or a limit the plan names cannot be empty (empty
      -- means none to validation).
      if shape[2] == 2 then b = ARGV[v + 1] if b == '' then b = '(empty)' end end
      v = v + shape[2]
      if string.find(c, '^%u$') then
        conditions[#conditions + 1] = {kind = shape[1], k = n, want = a, index = #conditions}
      else
        ops[#ops + 1] = {kind = shape[1], k = n, a = a, b = b}
      end
    end
    return conditions, ops
  end

  -- Checks `conditions` (read_batch's) in order, on the keys now, key
  -- number i being `key_of(i)` (`check_condition`): nil when all hold,
  -- else what `check_condition` answers for the first that does not.
  local function check_conditions(conditions, key_of, known)
    for _, c in ipairs(conditions) do
      local failed = check_condition(c.kind, key_of(c.k), c.want, c.index, known)
      if failed then return failed end
    end
    return nil
  end

  -- {-1, key, reason} for the first operation of `list` (read_batch's) that
  -- does not fit (`simulator`, with `known` from `check_conditions`), or nil;
  -- key number i is `key_of(i)`.
  local function validate(list, key_of, known)
    local fits = simulator(known)
    for _, op in ipairs(list) do
      local k = key_of(op.k)
      local reason = fits(k, op.kind, op.a, op.b)
      if reason then return {-1, k, reason} end
    end
    return nil
  end

  return {parse_int = parse_int, add = add, beyond = beyond, simulator = simulator,
    read_batch = read_batch, read_plan = read_plan, check_conditions = check_conditions, validate = validate}
end
