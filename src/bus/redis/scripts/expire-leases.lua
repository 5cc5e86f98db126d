-- expire-leases.lua: EXPIRE LEASES: every live lease of a role runs out now.
--
-- KEYS[1]  {p}:r:<role>:L  the role's lease deadlines
-- ARGV[1]  now (client clock, ms)
-- Returns how many leases were moved to now.
--
-- Atomic: each live lease's deadline becomes now (XX: only tokens in the
-- set), so the next lease call of the role takes them back as it takes back
-- any expired lease (a redelivery, counted); a lease already past its
-- deadline keeps it. Used by a consumer taking over from a dead one.
-- Derived keys: none.

local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')
for _, token in ipairs(live) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[1], token)
end
return #live
