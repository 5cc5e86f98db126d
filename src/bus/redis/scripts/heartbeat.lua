-- heartbeat.lua: HEARTBEAT: extends a live lease.
--
-- KEYS[1]  {p}:r:<role>:L  the role's lease deadlines
-- ARGV[1]  lease token
-- ARGV[2]  new deadline (client clock, ms)
-- Returns 1, or 0 when the lease is not live (nothing changes).
--
-- Atomic: the deadline moves only while the token is in the set (XX), so an
-- expired or ended lease is never revived.
-- Derived keys: none.

if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[1])
return 1
