-- kvmodel reads that follow keys, each in one round trip. They write
-- nothing. ARGV[1] names the read:
--
-- `via`: KEYS[1] is a key whose value is another key (a unique claim and
-- its record). Returns {} when KEYS[1] holds nothing, else {value, target}
-- with target the value at that key (nil when it holds no string value).
--
-- `page`: KEYS[1] is a sorted collection whose entries end with a key
-- (sort key, terminated by the bytes 0 1, then the member). ARGV[2] is
-- the range command (ZRANGEBYLEX or ZREVRANGEBYLEX), ARGV[3] and ARGV[4]
-- its bounds in command order, ARGV[5] the most entries to return.
-- Returns {entries, values}, values[i] being the value at the key of
-- entries[i] (nil when it holds no string value).

-- The value at `key` when it holds a string, else false (nil in the reply),
-- as MGET answers.
local function value(key)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' then return false end
  return v
end

if ARGV[1] == 'via' then
  local pointer = redis.call('GET', KEYS[1])
  if not pointer then return {} end
  return {pointer, value(pointer)}
end

local entries = redis.call(ARGV[2], KEYS[1], ARGV[3], ARGV[4], 'LIMIT', 0, ARGV[5])
-- The keys the entries end with, read with MGET (in slices, each within
-- what `unpack` passes), which answers nil for a key that holds no string
-- value; an entry that names no key has no value. Nearly always every
-- entry names one, and the values are MGET's answer as it is.
local keys, at_of, whole = {}, nil, true
for i, entry in ipairs(entries) do
  -- Inside the sort key every 0 byte is followed by 255, so the first
  -- 0 1 ends it.
  local at = string.find(entry, '\0\1', 1, true)
  if at then
    keys[#keys + 1] = string.sub(entry, at + 2)
    if not whole then at_of[#keys] = i end
  elseif whole then
    whole, at_of = false, {}
    for j = 1, #keys do at_of[j] = j end
  end
end
local SLICE = 1000
if whole and #keys <= SLICE then
  if #keys == 0 then return {entries, {}} end
  return {entries, redis.call('MGET', unpack(keys))}
end
local values = {}
for i = 1, #entries do values[i] = false end
for first = 1, #keys, SLICE do
  local last = math.min(first + SLICE - 1, #keys)
  local found = redis.call('MGET', unpack(keys, first, last))
  for j = first, last do values[(at_of and at_of[j]) or j] = found[j - first + 1] end
end
return {entries, values}
