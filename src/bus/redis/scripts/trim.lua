-- trim.lua: TRIM a role's stream below its oldest pending entry (MINID).
--
-- KEYS[1]  {p}:r:<role>:s  the role's stream
-- ARGV     none
-- Returns 1.
--
-- Atomic: acked entries go; delivered-but-unacked and undelivered ones stay.
-- Derived keys: none.

trim(KEYS[1])
return 1
