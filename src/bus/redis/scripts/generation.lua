-- generation.lua: GENERATION: the deployment's generation, set if missing.
--
-- KEYS[1]  {p}:gen  the generation (a string)
-- ARGV[1]  a new random id, used only when the key is missing
-- Returns the generation.
--
-- Atomic: the first reader after the deployment's data was lost (a server
-- restarted empty, a FLUSHALL) sets a new one, and every reader then sees
-- it, so a Coordinator that read another before knows the bus lost state.
-- Derived keys: none.

redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
