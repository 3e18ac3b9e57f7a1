-- kvmodel atomic commit of a batch, in one step: a server's commit, and a
-- cluster's batch within one hash slot (behind cluster/single.lua).
--
-- KEYS: every key the batch touches, once each, in the order the batch
-- first names them. ARGV[1], the plan: per condition, then per operation,
-- a kind byte and the key's number (from 1: one byte below 128, else two
-- bytes from 128 or three from 192, big-endian, the high bits of the
-- first being the width); then ARGV[2], … the values the kinds take, in
-- plan order. Conditions (upper case): A absent, E equals (value),
-- O absent or equals (value), P present. Operations (lower case): p put
-- (value), q put with a time to live (value, ms), d delete, c delete if
-- it holds (value), u and v add
-- one and minus one, i add (amount), l add within a limit (amount,
-- limit), z and r add and remove a member (entry), t trim (how many to
-- keep), x expire (ms), f append to a change feed (entry, retention in
-- ms). Anything after the values is the caller's (the cluster's holds).
--
-- An ordinary batch is committed here without a function of its own (a
-- script pays for each function it defines on every run): its conditions
-- checked with one `GET` each; a value key put or deleted (conditionally
-- or not) once (a put or a conditional delete on a key no condition read
-- asks its `TYPE`); members and counters moved
-- any number of times; feeds (feed.lua's `feed_append`) appended to.
-- Members added to collections that lose none, and counters, are moved
-- first, with commands that refuse a key of another kind and then change
-- nothing, and are moved back if one is refused; a collection that loses
-- members has its `TYPE` asked, and changes with the values, written last
-- with commands that cannot fail, then the feeds. Anything else, and a refusal, goes to `general`
-- (general.lua: prelude.lua's exact validation with the rules of
-- `kvmodel_runtime::store::check`), which names what does not fit. A
-- refused batch writes nothing. (A counter moved back to zero is removed:
-- an absent counter reads as zero.)

local KEYS, ARGV = KEYS, ARGV
local byte, call, pcall, find = string.byte, redis.call, redis.pcall, string.find
local plan = ARGV[1]
local len = #plan
local known = {}

-- Conditions: each key read once, what it held kept for `general`.
local p, v, index = 1, 2, 0
while p <= len do
  local kind = byte(plan, p)
  if kind > 90 then break end
  local n = byte(plan, p + 1)
  p = p + 2
  if n >= 128 then
    if n >= 192 then n, p = ((n - 192) * 256 + byte(plan, p)) * 256 + byte(plan, p + 1), p + 2
    else n, p = (n - 128) * 256 + byte(plan, p), p + 1 end
  end
  local k = KEYS[n]
  local cur = pcall('GET', k)
  if type(cur) == 'table' then return general(nil) end
  local ok
  if kind == 65 then ok = not cur
  elseif kind == 80 then ok = cur
  elseif kind == 69 or kind == 79 then
    ok = cur == ARGV[v] or (kind == 79 and not cur)
    v = v + 1
  else return general(nil) end
  if not ok then return {0, index} end
  known[k] = cur
  index = index + 1
end

-- The operations, read into `kinds`, `keys`, `as` and `bs`, if they are
-- ordinary: a value key put or deleted once and nothing else, a member key
-- only gaining and losing members, a counter only moving, a feed (a Stream
-- or nothing yet) only growing.
local kinds, keys, as, bs, role, late, m = {}, {}, {}, {}, {}, {}, 0
while p <= len do
  local kind = byte(plan, p)
  local n = byte(plan, p + 1)
  p = p + 2
  if n >= 128 then
    if n >= 192 then n, p = ((n - 192) * 256 + byte(plan, p)) * 256 + byte(plan, p + 1), p + 2
    else n, p = (n - 128) * 256 + byte(plan, p), p + 1 end
  end
  local k, r, a, b = KEYS[n], role[n], nil, nil
  if kind == 112 or kind == 113 or kind == 100 or kind == 99 then
    if r then return general(known) end
    role[n] = 1
    if kind ~= 100 then
      a = ARGV[v]
      v = v + 1
      if kind == 113 then
        b = ARGV[v]
        v = v + 1
        if not (find(b, '^[1-9][0-9]*$') and #b <= 13) then return general(known) end
      end
      if known[k] == nil then
        local t = call('TYPE', k).ok
        if t ~= 'string' and t ~= 'none' then return general(known) end
      end
    end
  elseif kind == 122 or kind == 114 then
    if r and r ~= 2 then return general(known) end
    role[n] = 2
    a = ARGV[v]
    v = v + 1
    -- A collection that loses members is checked here and changed with the
    -- values, never moved back: a removal that empties it takes its time to
    -- live with it, which adding the member again would not restore.
    if kind == 114 and not late[k] then
      local t = call('TYPE', k).ok
      if t ~= 'zset' and t ~= 'none' then return general(known) end
      late[k] = true
    end
  elseif kind == 117 or kind == 118 or kind == 105 then
    if r and r ~= 3 then return general(known) end
    role[n] = 3
    if kind == 117 then a = '1'
    elseif kind == 118 then a = '-1'
    else
      a = ARGV[v]
      v = v + 1
      -- What the counter rule and INCRBY both take: a canonical decimal
      -- within 64 bits (INCRBY refuses the rest of the range).
      if not ((#a <= 20 and find(a, '^%-?[1-9][0-9]*$')) or a == '0') then return general(known) end
    end
    kind = 105
  elseif kind == 102 then
    if r and r ~= 4 then return general(known) end
    if not r then
      role[n] = 4
      local t = call('TYPE', k).ok
      if t ~= 'stream' and t ~= 'none' then return general(known) end
    end
    a, b = ARGV[v], ARGV[v + 1]
    v = v + 2
    if not (find(b, '^[1-9][0-9]*$') and #b <= 13) then return general(known) end
  elseif kind <= 90 then
    -- A condition after an operation: checked with the rest, by `general`.
    return general(nil)
  else
    return general(known)
  end
  m = m + 1
  kinds[m], keys[m], as[m], bs[m] = kind, k, a, b
end

-- Members (of collections that only gain them) and counters move first.
-- On a refusal what moved moves back, last first, and `general` names the
-- refusal.
for j = 1, m do
  local kind = kinds[j]
  local got
  if kind == 122 and not late[keys[j]] then got = pcall('ZADD', keys[j], 0, as[j])
  elseif kind == 105 then got = pcall('INCRBY', keys[j], as[j]) end
  if type(got) == 'table' then
    for u = j - 1, 1, -1 do
      local uk, k, a = kinds[u], keys[u], as[u]
      if uk == 122 then
        if bs[u] then call('ZREM', k, a) end
      elseif uk == 105 then
        local left
        if a == '-9223372036854775808' then
          -- (Text: a Lua number would be a double.)
          call('INCRBY', k, '9223372036854775807')
          left = call('INCRBY', k, '1')
        elseif byte(a, 1) == 45 then left = call('INCRBY', k, string.sub(a, 2))
        elseif a ~= '0' then left = call('INCRBY', k, '-' .. a) end
        if left == 0 then call('UNLINK', k) end
      end
    end
    return general(known)
  end
  -- Whether a member came (so that taking it back is owed).
  if kind == 122 and got == 1 then bs[j] = true end
end

-- The values and the collections that lose members, then the feeds
-- (their entries last in the plan): commands that cannot fail now.
for j = 1, m do
  local kind = kinds[j]
  if kind == 114 then call('ZREM', keys[j], as[j])
  elseif kind == 122 and late[keys[j]] then call('ZADD', keys[j], 0, as[j])
  elseif kind == 112 then call('SET', keys[j], as[j])
  elseif kind == 113 then call('SET', keys[j], as[j], 'PX', bs[j])
  -- UNLINK, never DEL: a big collection is freed in the background.
  elseif kind == 100 then call('UNLINK', keys[j])
  -- A conditional delete: only the value it names goes.
  elseif kind == 99 then if call('GET', keys[j]) == as[j] then call('UNLINK', keys[j]) end
  elseif kind == 102 then feed_append(keys[j], bs[j], as[j]) end
end
return {1}
