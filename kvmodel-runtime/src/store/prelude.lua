-- What every kvmodel script shares (redis.lua and each step of the
-- cluster's cross-slot protocol start with this text): exact counter
-- arithmetic and the checks of a time to live.

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

-- A time to live in milliseconds, as kvmodel sends it: 1 to 13 digits, no
-- leading zero (at most ~317 years, so SET PX and PEXPIRE never overflow).
local function is_ms(s)
  return string.match(s, '^[1-9][0-9]*$') ~= nil and #s <= 13
end

local function holds(t)
  if t == 'zset' then return 'a sorted collection' end
  return 'a Redis ' .. t
end
