-- forget.lua: forgets a run's context.
--
-- KEYS[1]  {p}:cx:o:<runId>  the run's hop outputs
-- KEYS[2]  {p}:cx:m:<runId>  the run's memory
-- KEYS[3]  {p}:cx:k:<runId>  the run's checkpoints (set of their key names)
-- KEYS[4]  {p}:cx:q:<runId>  the run's hops with an output
-- ARGV     none
-- Returns how many checkpoints were deleted.
--
-- Atomic: the run's keys and every checkpoint it names go together.
-- Derived keys: the checkpoints {p}:cx:c:<token>, read from KEYS[3] (their
-- tokens are known only from the set). The store writes only names with the
-- same hash tag {p} into it, so they lie in the slot of the declared keys.

local checkpoints = redis.call('SMEMBERS', KEYS[3])
for i = 1, #checkpoints, 500 do
  redis.call('DEL', unpack(checkpoints, i, math.min(i + 499, #checkpoints)))
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return #checkpoints
