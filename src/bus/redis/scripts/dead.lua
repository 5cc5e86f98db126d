-- dead.lua: DEAD: replay or purge dead letters of one role.
--
-- KEYS[1]      {p}:seq    message id counter (unused; the common layout)
-- KEYS[2]      {p}:roles  roles seen (a replay may create the role's stream)
-- KEYS[3..14]  the role's key group (library.lua, ROLE_KEYS)
-- ARGV[1]      role
-- ARGV[2]      now (client clock, ms)
-- ARGV[3]      action: 'replay' | 'purge'
-- ARGV[4]      batch size
-- ARGV[5...]   message ids (none = the oldest `batch` dead letters)
-- Returns how many moved.
--
-- Atomic: each dead letter leaves the dead-letter stream and its index and
-- either returns to the role's stream with its deliveries reset (replay) or
-- is gone with its idempotency key (purge), in one step.
-- Derived keys: none.

local role, now, action, batch = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
bind_role(role, 3)
local dlq, dx = rkey(role, 'dlq'), rkey(role, 'dx')
local entries = {}
if #ARGV >= 5 then
  for i = 5, #ARGV do
    local e = redis.call('HGET', dx, ARGV[i])
    local r = e and redis.call('XRANGE', dlq, e, e)[1]
    if r then entries[#entries + 1] = r end
  end
else
  entries = redis.call('XRANGE', dlq, '-', '+', 'COUNT', batch)
end
local n = 0
for _, en in ipairs(entries) do
  redis.call('XDEL', dlq, en[1])
  if en[2] then
    local m = parse_fields(en[2])
    redis.call('HDEL', dx, m.m)
    if action == 'replay' then
      m.d = '0'
      m.av = now
      to_stream(role, m)
      ready_add(role, 1)
    else
      -- A dead letter was never acked: its key is in no retention list.
      redis.call('HDEL', rkey(role, 'idem'), m.k)
    end
    n = n + 1
  end
end
flush_ready()
return n
