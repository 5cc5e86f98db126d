-- effect.lua: records an effect marker once.
--
-- KEYS[1]  {p}:cx:e:<scope>  the scope's effect markers (hash)
-- ARGV[1]  effect key
-- ARGV[2]  value JSON
-- ARGV[3]  retention ms
-- Returns 1 when recorded, 0 when the key was already there (nothing changes).
--
-- Atomic: the marker and the scope's new TTL (the retention from now) go
-- together, so a scope lives the retention past its newest marker.
-- Derived keys: none.

if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
