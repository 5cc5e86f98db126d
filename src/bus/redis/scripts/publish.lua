-- publish.lua: PUBLISH a batch of messages.
--
-- KEYS[1]     {p}:seq    message id counter
-- KEYS[2]     {p}:roles  roles seen
-- KEYS[3...]  one group of role keys (library.lua, ROLE_KEYS) per role of the
--             batch, in the order the roles first appear in ARGV
-- ARGV        per message: role, idempotency key, delay ms, the x field's value
--             after the id ('|<deliveries>|<published at>|<ready since>'), n,
--             then the message's other n entry field strings in entry order
--             (k, env, then t, rp, ma when set)
-- Returns, flat, per message: its id and 1 when it was a duplicate (the id
-- the key first got), else 0.
--
-- Atomic: the whole batch is published or none of it; a key already known
-- (published before, or earlier in the batch) publishes nothing and returns
-- the first id; ids, idempotency entries and ready counts move together.
-- Derived keys: none (every role is declared).

local count = 0
local i = 1
while i <= #ARGV do
  count = count + 1
  i = i + 5 + tonumber(ARGV[i + 4])
end
local next_id = redis.call('INCRBY', SEQ, count) - count
local known = {}
local byrole = {}
local groups = 0
i = 1
while i <= #ARGV do
  local role = ARGV[i]
  local b = byrole[role]
  if not b then
    b = {keys = {}, new = {}, ready = 0}
    byrole[role] = b
    known[role] = {}
    bind_role(role, 3 + #ROLE_KEYS * groups)
    groups = groups + 1
  end
  b.keys[#b.keys + 1] = ARGV[i + 1]
  i = i + 5 + tonumber(ARGV[i + 4])
end
for role, b in pairs(byrole) do
  ensure_group(role)
  local found = redis.call('HMGET', rkey(role, 'idem'), unpack(b.keys))
  local kn = known[role]
  for j, k in ipairs(b.keys) do
    if found[j] then kn[k] = found[j] end
  end
end
local res = {}
i = 1
while i <= #ARGV do
  local role, k, delay, nf = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 4])
  local existing = known[role][k]
  if existing then
    res[#res + 1] = existing
    res[#res + 1] = 1
  else
    next_id = next_id + 1
    local id = string.format('%d', next_id)
    known[role][k] = id
    local b = byrole[role]
    b.new[#b.new + 1] = k
    b.new[#b.new + 1] = id
    if delay ~= '0' then
      local m = parse_fields({'x', id .. ARGV[i + 3], unpack(ARGV, i + 5, i + 4 + nf)})
      hold(role, m)
      redis.call('ZADD', rkey(role, 'z'), m.av, id)
    else
      redis.call('XADD', rkey(role, 's'), '*', 'x', id .. ARGV[i + 3], unpack(ARGV, i + 5, i + 4 + nf))
      b.ready = b.ready + 1
    end
    res[#res + 1] = id
    res[#res + 1] = 0
  end
  i = i + 5 + nf
end
for role, b in pairs(byrole) do
  if #b.new > 0 then redis.call('HSET', rkey(role, 'idem'), unpack(b.new)) end
  if b.ready > 0 then ready_add(role, b.ready) end
end
flush_ready()
return res
