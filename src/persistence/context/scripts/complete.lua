-- complete.lua: a hop's completion, applied once.
--
-- KEYS[1]  {p}:cx:d:<key>        the hop's completion record (string)
-- KEYS[2]  {p}:cx:o:<runId>      the run's hop outputs (list)
-- KEYS[3]  {p}:cx:m:<runId>      the run's memory (hash)
-- KEYS[4]  {p}:cx:c:<token>      the new checkpoint (the record's own key's when none)
-- KEYS[5]  {p}:cx:c:<resumed>    the resumed checkpoint (likewise)
-- KEYS[6]  {p}:cx:k:<runId>      the run's checkpoints (set of their key names)
-- KEYS[7]  {p}:cx:q:<runId>      the run's hops with an output (set of their cx:d: key names)
-- ARGV[1]  completion JSON
-- ARGV[2]  output JSON, or ''
-- ARGV[3]  checkpoint JSON, or ''
-- ARGV[4]  now (client clock, ms)
-- ARGV[5]  '1' when a checkpoint was resumed
-- ARGV[6]  retention ms (the completion record's TTL, and the resumed checkpoint's)
-- ARGV[7...]  memory updates, triples: 'S' key JSON (set) or 'D' key '-' (delete)
-- Returns {1, the completion} the first time, {0, the first completion} after.
--
-- Atomic: the completion record, the output (appended once per hop even after
-- the record expired: KEYS[7]), the memory updates, the new checkpoint and the
-- resumed checkpoint's mark and TTL apply whole or not at all; a second
-- completion of the same key writes nothing.
-- Derived keys: none.

local ok = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[6])
if not ok then return {0, redis.call('GET', KEYS[1])} end
if ARGV[2] ~= '' and redis.call('SADD', KEYS[7], KEYS[1]) == 1 then redis.call('RPUSH', KEYS[2], ARGV[2]) end
if ARGV[3] ~= '' then
  redis.call('HSETNX', KEYS[4], 'body', ARGV[3])
  redis.call('SADD', KEYS[6], KEYS[4])
end
if ARGV[5] == '1' and redis.call('HEXISTS', KEYS[5], 'body') == 1 then
  if redis.call('HSETNX', KEYS[5], 'resumedAt', ARGV[4]) == 1 then
    redis.call('PEXPIRE', KEYS[5], ARGV[6])
  end
end
local i = 7
while i <= #ARGV do
  if ARGV[i] == 'S' then redis.call('HSET', KEYS[3], ARGV[i + 1], ARGV[i + 2])
  else redis.call('HDEL', KEYS[3], ARGV[i + 1]) end
  i = i + 3
end
return {1, ARGV[1]}
