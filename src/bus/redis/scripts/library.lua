-- library.lua: the helpers of the work bus's scripts. The loader
-- (bus/redis/scripts.ts) puts this file before the body of every bus script:
-- one EVAL source each, so this file has no KEYS or ARGV of its own. The
-- loader replaces {{RESULTS_ROLE}} with the protocol's result role.
--
-- P is the deployment's hash tag '{prefix}', taken from KEYS[1]: every key
-- the helpers derive at run time starts with it, so it hashes to the one Redis
-- Cluster slot of the declared keys (a cluster refuses a script that strays
-- from its slot).
--
-- Declared keys. The scripts that move messages (publish, lease, ack,
-- settle, dead) declare KEYS[1] = {p}:seq, KEYS[2] = {p}:roles, then one group
-- of twelve keys per role named in their ARGV, in the order of ROLE_KEYS
-- (RedisKeys.roleKeys on the TypeScript side); `bind_role` hands a group to
-- `rkey`. The scripts of one or a few keys (heartbeat, list-dead, stats,
-- trim) declare just those and use no helper that derives a key (only
-- `parse_fields`, `trim` and `G`).
--
-- Derived keys (known only from data read inside the script, so they cannot
-- be declared before the call), all `P .. ...`:
--   {p}:t:<task>, {p}:tw:<task>  the per-task lock and waiting list of a task
--                                key read from a stream entry or lease token;
--   {p}:r:<role>:*               the keys of a role no group declares: the role
--                                of a message waiting for a task lock (named in
--                                {p}:tw:<task>), the role holding a lock (named in
--                                {p}:t:<task>), the result role of a dead work
--                                message (named in its envelope).
-- Per-task serialization holds across roles because these keys share the slot.

local P = string.match(KEYS[1], '^{[^}]*}')
local SEQ, ROLES = KEYS[1], KEYS[2]
local RESULTS_ROLE = '{{RESULTS_ROLE}}'
local G = 'g'

-- A role's keys, in the order its group is declared.
local ROLE_KEYS = {'s', 'z', 'L', 'held', 'dlq', 'dx', 'idem', 'ix', 'n', 'oc', 'ocur', 'tr'}
local bound = {}

-- The group of role's keys starting at KEYS[i] (checked against the layout).
local function bind_role(role, i)
  if KEYS[i] ~= P .. ':r:' .. role .. ':s' then
    error('KEYS[' .. i .. '] is not the key group of role ' .. role)
  end
  local t = {}
  for j = 1, #ROLE_KEYS do t[ROLE_KEYS[j]] = KEYS[i + j - 1] end
  bound[role] = t
end

-- Key s of role: declared when the role's group is bound, else derived.
local function rkey(role, s)
  local t = bound[role]
  if t then return t[s] end
  return P .. ':r:' .. role .. ':' .. s
end
local function tkey(t) return P .. ':t:' .. t end
local function wkey(t) return P .. ':tw:' .. t end

local FIELDS = {'k', 'env', 't', 'err', 'rp', 'ma'}

-- A message from its entry's fields; x = '<id>|<deliveries>|<published
-- at>|<ready since>' (entries written before x existed carry m, d, pa, av
-- as fields of their own).
local function parse_fields(flat)
  local m = {}
  for j = 1, #flat, 2 do m[flat[j]] = flat[j + 1] end
  if m.x then
    m.m, m.d, m.pa, m.av = string.match(m.x, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    m.x = nil
  end
  return m
end

local function entry_fields(m)
  local f = {'x', m.m .. '|' .. (m.d or '0') .. '|' .. (m.pa or '0') .. '|' .. (m.av or m.pa or '0')}
  for _, name in ipairs(FIELDS) do
    local v = m[name]
    if v ~= nil and v ~= false and v ~= '' then
      f[#f + 1] = name
      f[#f + 1] = tostring(v)
    end
  end
  return f
end

local ensured = {}
local function ensure_group(role)
  if ensured[role] then return end
  local s = rkey(role, 's')
  if redis.call('EXISTS', s) == 0 then
    redis.call('XGROUP', 'CREATE', s, G, '0', 'MKSTREAM')
    redis.call('SADD', ROLES, role)
  end
  ensured[role] = true
end

local ready_delta = {}
local function ready_add(role, n)
  ready_delta[role] = (ready_delta[role] or 0) + n
end
local function flush_ready()
  for role, n in pairs(ready_delta) do
    if n ~= 0 then redis.call('HINCRBY', rkey(role, 'n'), 'ready', n) end
  end
end

-- Appends a message to its role's stream: ready now.
local function to_stream(role, m)
  ensure_group(role)
  return redis.call('XADD', rkey(role, 's'), '*', unpack(entry_fields(m)))
end

local function hold(role, m)
  redis.call('HSET', rkey(role, 'held'), m.m, cjson.encode(m))
end

local function take_held(role, id)
  local j = redis.call('HGET', rkey(role, 'held'), id)
  if not j then return nil end
  redis.call('HDEL', rkey(role, 'held'), id)
  return cjson.decode(j)
end

-- A lease token: <entry id>|<task part>|<idempotency key>, the task part ''
-- without a task key, else <length>:<task key>.
local function token(eid, t, k)
  if t == nil or t == '' then return eid .. '||' .. k end
  return eid .. '|' .. string.len(t) .. ':' .. t .. '|' .. k
end

-- Entry id, task key ('' = none) and idempotency key of a token (nil when it
-- is not one).
local function parse_token(tok)
  local p = string.find(tok, '|', 1, true)
  if not p then return nil end
  local eid = string.sub(tok, 1, p - 1)
  if string.sub(tok, p + 1, p + 1) == '|' then return eid, '', string.sub(tok, p + 2) end
  local q = string.find(tok, ':', p + 1, true)
  local n = q and tonumber(string.sub(tok, p + 1, q - 1))
  if not n or string.sub(tok, q + n + 1, q + n + 1) ~= '|' then return nil end
  return eid, string.sub(tok, q + 1, q + n), string.sub(tok, q + n + 2)
end

-- The lock value of a task whose message is leased under token tok in role.
local function held_by(role, tok)
  return 'l|' .. role .. '|' .. tok
end

-- Frees the task lock held by the lease tok of role: the oldest waiting message
-- of the task goes back to its role's stream with the lock reserved for it.
local function unlock_task(t, role, tok)
  if not t or t == '' then return end
  local tk = tkey(t)
  if redis.call('GET', tk) ~= held_by(role, tok) then return end
  while true do
    local nxt = redis.call('LPOP', wkey(t))
    if not nxt then
      redis.call('DEL', tk)
      return
    end
    local nid, nrole = string.match(nxt, '^(%d+)|(.*)$')
    local m = nid and take_held(nrole, nid)
    if m then
      to_stream(nrole, m)
      redis.call('SET', tk, 'p|' .. nid .. '|' .. nrole)
      return
    end
  end
end

-- A dead work message's failure result, published to the hop's result role
-- in the same script as the dead-letter move (see dead-letter-notice.ts). The
-- headers are re-encoded (strings and small integers only); the error is the
-- stored JSON as it is.
local function notify_dead(role, m, now)
  if not m.env then return end
  local ok, env = pcall(cjson.decode, m.env)
  if not ok or type(env) ~= 'table' or env.kind ~= 'work' or type(env.headers) ~= 'table' then return end
  local to = env.headers.resultRole
  if type(to) ~= 'string' then to = RESULTS_ROLE end
  local err = m.err
  if not err or err == '' then err = '{"type":"DeadLetter","message":"dead-lettered"}' end
  local d = tonumber(m.d) or 0
  local body = '{"kind":"result","headers":' .. cjson.encode(env.headers) .. ',"role":' .. cjson.encode(role)
    .. ',"outcome":"failed","parts":[],"artifacts":[],"error":' .. err
    .. ',"deliveries":' .. string.format('%d', math.max(1, d))
    .. ',"deadLetter":' .. cjson.encode(m.m) .. '}'
  local id = string.format('%d', redis.call('INCR', SEQ))
  local k = '$dead:' .. m.m .. ':' .. string.format('%d', d) .. ':' .. now
  redis.call('HSET', rkey(to, 'idem'), k, id)
  to_stream(to, {m = id, k = k, env = body, d = '0', pa = now, av = now})
  ready_add(to, 1)
end

local function dead_letter(role, m, now)
  local f = entry_fields(m)
  f[#f + 1] = 'da'
  f[#f + 1] = tostring(now)
  local dx = redis.call('XADD', rkey(role, 'dlq'), '*', unpack(f))
  redis.call('HSET', rkey(role, 'dx'), m.m, dx)
  notify_dead(role, m, now)
end

-- Ends the lease tok (fence already checked): the message as it stands, with
-- this delivery counted; its entry acked, its token gone, its task freed.
local function end_lease(role, tok)
  local eid, t = parse_token(tok)
  redis.call('ZREM', rkey(role, 'L'), tok)
  if not eid then return nil end
  local s = rkey(role, 's')
  local r = redis.call('XRANGE', s, eid, eid)[1]
  redis.call('XACK', s, G, eid)
  unlock_task(t, role, tok)
  if not r or not r[2] then return nil end
  local m = parse_fields(r[2])
  m.d = string.format('%d', tonumber(m.d or '0') + 1)
  return m
end

-- An expired lease (deadline dl): redelivered, or dead-lettered when out of
-- attempts.
local function expire(role, tok, dl, now, md, mad, err)
  local m = end_lease(role, tok)
  if not m then return end
  m.err = err
  local d = tonumber(m.d)
  local ma = tonumber((m.ma and m.ma ~= '') and m.ma or mad)
  if d >= md or (ma > 0 and d >= ma) then
    dead_letter(role, m, now)
  else
    m.av = dl
    to_stream(role, m)
    ready_add(role, 1)
  end
end

-- Trims stream s below its oldest pending entry (MINID).
local function trim(s)
  if redis.call('EXISTS', s) == 0 then return end
  local pend = redis.call('XPENDING', s, G)
  local minid = false
  if tonumber(pend[1]) > 0 then
    minid = pend[2]
  else
    for _, grp in ipairs(redis.call('XINFO', 'GROUPS', s)) do
      local name, last = nil, nil
      for j = 1, #grp, 2 do
        if grp[j] == 'name' then name = grp[j + 1] end
        if grp[j] == 'last-delivered-id' then last = grp[j + 1] end
      end
      if name == G and last then
        -- Nothing pending: everything up to the last delivered entry is acked.
        local ms, seq = string.match(last, '^(%d+)-(%d+)$')
        if ms then minid = ms .. '-' .. string.format('%d', tonumber(seq) + 1) end
      end
    end
  end
  if minid then redis.call('XTRIM', s, 'MINID', minid) end
end

-- Acked idempotency keys wait in the role's list ix, one element per ack
-- call: '<ack time>|<JSON array of keys>', oldest first (an element behind a
-- later-timed one waits for it: kept longer, never forgotten early).
-- Forgets the keys of elements acked at or before the given time, at least n keys
-- if there are that many (whole elements).
local function forget(role, before, n)
  local ix = rkey(role, 'ix')
  local done = 0
  while done < n do
    local head = redis.call('LINDEX', ix, 0)
    if not head then return end
    local p = string.find(head, '|', 1, true)
    if tonumber(string.sub(head, 1, p - 1)) > before then return end
    redis.call('LPOP', ix)
    local keys = cjson.decode(string.sub(head, p + 1))
    if #keys > 0 then redis.call('HDEL', rkey(role, 'idem'), unpack(keys)) end
    done = done + #keys
  end
end
