-- stats.lua: STATS of one role.
--
-- KEYS[1]  {p}:r:<role>:s    the role's stream
-- KEYS[2]  {p}:r:<role>:z    its delayed messages' ready times
-- KEYS[3]  {p}:r:<role>:L    its lease deadlines
-- KEYS[4]  {p}:r:<role>:n    its counters (`ready`)
-- KEYS[5]  {p}:r:<role>:dlq  its dead-letter stream
-- ARGV[1]  now (client clock, ms)
-- Returns {depth, delayed, in flight, dead letters, ready-since of the oldest
-- message ready now (-1 = none)}.
--
-- Read-only; one script, so the counts are of one moment.
-- Derived keys: none.

local now = ARGV[1]
local s, z, L = KEYS[1], KEYS[2], KEYS[3]
local ready = tonumber(redis.call('HGET', KEYS[4], 'ready') or '0')
if ready < 0 then ready = 0 end
local due = redis.call('ZCOUNT', z, '-inf', now)
local later = redis.call('ZCOUNT', z, '(' .. now, '+inf')
local expired = redis.call('ZCOUNT', L, '-inf', now)
local live = redis.call('ZCOUNT', L, '(' .. now, '+inf')
local dead = redis.call('XLEN', KEYS[5])
local oldest = -1
local function older(v)
  v = tonumber(v)
  if v and (oldest < 0 or v < oldest) then oldest = v end
end
if redis.call('EXISTS', s) == 1 then
  for _, grp in ipairs(redis.call('XINFO', 'GROUPS', s)) do
    local name, last = nil, nil
    for j = 1, #grp, 2 do
      if grp[j] == 'name' then name = grp[j + 1] end
      if grp[j] == 'last-delivered-id' then last = grp[j + 1] end
    end
    if name == G then
      local first = redis.call('XRANGE', s, '(' .. last, '+', 'COUNT', 1)[1]
      if first and first[2] then older(parse_fields(first[2]).av) end
    end
  end
end
local zf = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
if zf[2] then older(zf[2]) end
local lf = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
if lf[2] then older(lf[2]) end
return {ready + due + expired, later, live, dead, string.format('%d', oldest)}
