-- ack.lua: ACK deliveries of one or more roles.
--
-- KEYS[1]     {p}:seq    message id counter (unused; the common layout)
-- KEYS[2]     {p}:roles  roles seen (a freed task's next message goes back to a stream)
-- KEYS[3...]  one group of role keys (library.lua, ROLE_KEYS) per role of the
--             deliveries, in the order the roles first appear in ARGV
-- ARGV[1]     idempotency retention ms
-- ARGV[2]     now (client clock, ms)
-- ARGV[3...]  pairs of role and lease token
-- Returns 1|0 per pair: 1 when the lease was live (the message is done).
--
-- Atomic: an acked message's entry is acked, its lease gone and its task freed
-- (the next waiting message of the task back on its role's stream with the
-- lock reserved for it) together; a lost lease changes nothing. Its
-- idempotency key joins the role's retention list in the same step.
-- Derived keys (library.lua): the locks and waiting lists of the tasks named in
-- the lease tokens; the roles of messages waiting for a freed task.

local retention, now = tonumber(ARGV[1]), tonumber(ARGV[2])
local byrole = {}
local order = {}
local groups = 0
for i = 3, #ARGV, 2 do
  local role = ARGV[i]
  local b = byrole[role]
  if not b then
    b = {toks = {}, pos = {}}
    byrole[role] = b
    bind_role(role, 3 + #ROLE_KEYS * groups)
    groups = groups + 1
  end
  b.toks[#b.toks + 1] = ARGV[i + 1]
  b.pos[#b.pos + 1] = #order + 1
  order[#order + 1] = 0
end
for role, b in pairs(byrole) do
  local live = redis.call('ZMSCORE', rkey(role, 'L'), unpack(b.toks))
  local toks, entries, keys = {}, {}, {}
  for j, tok in ipairs(b.toks) do
    if live[j] then
      local eid, t, k = parse_token(tok)
      if eid then
        order[b.pos[j]] = 1
        toks[#toks + 1] = tok
        entries[#entries + 1] = eid
        keys[#keys + 1] = k
        if t ~= '' then unlock_task(t, role, tok) end
      end
    end
  end
  if #toks > 0 then
    redis.call('ZREM', rkey(role, 'L'), unpack(toks))
    redis.call('XACK', rkey(role, 's'), G, unpack(entries))
    redis.call('RPUSH', rkey(role, 'ix'), ARGV[2] .. '|' .. cjson.encode(keys))
    -- Each ack call forgets at least twice the keys it retains (when that
    -- many are due): the list keeps pace.
    forget(role, now - retention, 2 * #keys)
    if redis.call('SET', rkey(role, 'tr'), '1', 'NX', 'PX', 1000) then trim(rkey(role, 's')) end
  end
end
return order
