-- settle.lua: SETTLE a lease: nack (retry or dead) and release.
--
-- KEYS[1]      {p}:seq    message id counter (dead-letter notices)
-- KEYS[2]      {p}:roles  roles seen
-- KEYS[3..14]  the role's key group (library.lua, ROLE_KEYS)
-- ARGV[1]      role
-- ARGV[2]      lease token
-- ARGV[3]      now (client clock, ms)
-- ARGV[4]      kind: 'retry' | 'dead' | 'release'
-- ARGV[5]      ready time (retry)
-- ARGV[6]      error JSON ('' on release)
-- Returns 1, or 0 when the lease is lost (nothing changes).
--
-- Atomic: the lease ends (entry acked, token gone, task freed) and the message
-- lands in one place (delayed, back on the stream, or the dead-letter stream
-- with its failure result published to the hop's result role) in one step.
-- Derived keys (library.lua): the lock and waiting list of the task named in
-- the token; the roles of messages waiting for the freed task; the result
-- role of a message dead-lettered here.

local role, tok, now, kind, at, err = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
bind_role(role, 3)
if not redis.call('ZSCORE', rkey(role, 'L'), tok) then return 0 end
local m = end_lease(role, tok)
if not m then return 1 end
if err ~= '' then m.err = err end
if kind == 'dead' then
  dead_letter(role, m, now)
elseif kind == 'retry' and tonumber(at) > tonumber(now) then
  m.av = at
  hold(role, m)
  redis.call('ZADD', rkey(role, 'z'), at, m.m)
else
  m.av = now
  to_stream(role, m)
  ready_add(role, 1)
end
flush_ready()
return 1
