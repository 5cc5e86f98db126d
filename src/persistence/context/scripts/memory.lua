-- memory.lua: updates a run's memory.
--
-- KEYS[1]  {p}:cx:m:<runId>  the run's memory (hash: key -> JSON)
-- ARGV     triples: 'S' key JSON (set) or 'D' key '-' (delete)
-- Returns 1.
--
-- Atomic: all updates of one call apply together.
-- Derived keys: none.

local i = 1
while i <= #ARGV do
  if ARGV[i] == 'S' then redis.call('HSET', KEYS[1], ARGV[i + 1], ARGV[i + 2])
  else redis.call('HDEL', KEYS[1], ARGV[i + 1]) end
  i = i + 3
end
return 1
