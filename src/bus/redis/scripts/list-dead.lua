-- list-dead.lua: LIST the dead letters of one role, oldest first.
--
-- KEYS[1]  {p}:r:<role>:dlq  the role's dead-letter stream
-- ARGV[1]  offset
-- ARGV[2]  limit
-- Returns {id, envelope, idempotency key, task key, deliveries, last error,
-- published at, dead at} per dead letter.
--
-- Read-only (one XRANGE: a consistent page).
-- Derived keys: none.

local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', offset + limit)
local res = {}
for i = offset + 1, #entries do
  if entries[i][2] then
    local m = parse_fields(entries[i][2])
    res[#res + 1] = {m.m, m.env, m.k, m.t or '', m.d or '0', m.err or '', m.pa, m.da or '0'}
  end
end
return res
