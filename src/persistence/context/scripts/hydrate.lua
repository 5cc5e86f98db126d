-- hydrate.lua: a run's context as a hop reads it, in one round trip.
--
-- KEYS[1]  {p}:cx:o:<runId>  the run's outputs (list of JSON, oldest first)
-- KEYS[2]  {p}:cx:m:<runId>  the run's memory (hash: key -> JSON)
-- Returns {outputs, memory}: the list's entries, and the hash as a flat
-- list key, value, key, value (HGETALL's reply).
--
-- Atomic: both are read at one point (what MULTI/EXEC gave).
-- Derived keys: none.

return { redis.call('LRANGE', KEYS[1], 0, -1), redis.call('HGETALL', KEYS[2]) }
