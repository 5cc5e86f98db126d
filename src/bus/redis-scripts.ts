import { type CommandParser, defineScript } from 'redis';

/**
 * The Lua scripts of the Redis Streams work bus. Each state change of a
 * message (publish, lease, ack, nack, release, expiry, dead-lettering, replay,
 * purge) is one script, so it is atomic: a message is never in two places,
 * and a dead-letter move (`XADD` to the role's dead-letter stream + `XACK` of
 * the original entry) happens whole or not at all.
 *
 * Every script takes the hash tag `{prefix}` as ARGV[1] and builds its key
 * names from it (the layout is in `redis-keys.ts`); KEYS[1] is one key of the
 * deployment, which routes the call to the slot all of them share.
 *
 * A message travels whole in its stream entry (fields m = id, k = idempotency
 * key, env = envelope JSON, d = deliveries so far, pa = published at, av =
 * ready since, and when set t = task key, err = last error JSON, rp = retry
 * policy override JSON, ma = its maximumAttempts). While it is leased, its
 * entry stays pending and a lease record (JSON `[leaseId, deadline, entry id,
 * deliveries, task key, idempotency key, visibility ms, maximumAttempts]`)
 * sits in the role's lease hash; while delayed or waiting for its task, the
 * message (JSON) sits in the role's held hash; when dead, in the role's
 * dead-letter stream. So the hot path (publish, lease, ack) costs one `XADD`
 * per message and a few commands per batch, like raw Streams.
 *
 * Times (`now`, deadlines, ready times) come from the client's clock, never
 * the server's, so an injected clock governs delays and leases; only two
 * throttles use server time (`PX`).
 */

const LIBRARY = `
local P = ARGV[1]
local G = 'g'
local function rkey(role, s) return P .. ':r:' .. role .. ':' .. s end
local function tkey(t) return P .. ':t:' .. t end
local function wkey(t) return P .. ':tw:' .. t end

local FIELDS = {'k', 'env', 'd', 'pa', 'av', 't', 'err', 'rp', 'ma'}

local function parse_fields(flat)
  local m = {}
  for j = 1, #flat, 2 do m[flat[j]] = flat[j + 1] end
  return m
end

local function entry_fields(m)
  local f = {'m', m.m}
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
    redis.call('SADD', P .. ':roles', role)
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

-- Frees the task lock held by message id of role: the oldest waiting message
-- of the task goes back to its role's stream with the lock reserved for it.
local function unlock_task(t, role, id)
  if not t or t == '' then return end
  local tk = tkey(t)
  if redis.call('GET', tk) ~= ('l|' .. id .. '|' .. role) then return end
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

local function dead_letter(role, m, now)
  local f = entry_fields(m)
  f[#f + 1] = 'da'
  f[#f + 1] = tostring(now)
  local dx = redis.call('XADD', rkey(role, 'dlq'), '*', unpack(f))
  redis.call('HSET', rkey(role, 'dx'), m.m, dx)
end

-- Ends a lease (fence already checked): the message as it stands, its entry
-- acked, its lease record gone, its task freed.
local function end_lease(role, id, rec)
  local s = rkey(role, 's')
  local r = redis.call('XRANGE', s, rec[3], rec[3])[1]
  redis.call('XACK', s, G, rec[3])
  redis.call('HDEL', rkey(role, 'ls'), id)
  redis.call('ZREM', rkey(role, 'L'), id)
  unlock_task(rec[5], role, id)
  if not r then return nil end
  local m = parse_fields(r[2])
  m.d = rec[4]
  return m
end

-- An expired lease: redelivered, or dead-lettered when out of attempts.
local function expire(role, id, rec, now, md, mad, err)
  local m = end_lease(role, id, rec)
  if not m then return end
  m.err = err
  local d = tonumber(rec[4])
  local ma = tonumber(rec[8] ~= '' and rec[8] or mad)
  if d >= md or (ma > 0 and d >= ma) then
    dead_letter(role, m, now)
  else
    m.av = rec[2]
    to_stream(role, m)
    ready_add(role, 1)
  end
end

local function trim(role)
  local s = rkey(role, 's')
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

-- Forgets up to n idempotency keys acked longer than the retention ago.
local function forget(role, before, n)
  local idx = rkey(role, 'idx')
  local old = redis.call('ZRANGEBYSCORE', idx, '-inf', before, 'LIMIT', 0, n)
  if #old > 0 then
    redis.call('HDEL', rkey(role, 'idem'), unpack(old))
    redis.call('ZREM', idx, unpack(old))
  end
end
`;

type Script = ReturnType<typeof script>;

function script(body: string) {
  return defineScript({
    NUMBER_OF_KEYS: 1,
    SCRIPT: `${LIBRARY}\n${body}`,
    parseCommand(parser: CommandParser, key: string, args: readonly (string | number)[]) {
      parser.pushKey(key);
      for (const a of args) parser.push(String(a));
    },
    transformReply(reply: unknown) {
      return reply;
    },
  });
}

/**
 * PUBLISH. ARGV: P, now, then per message: role, idempotency key, task key
 * ('' = none), envelope JSON, delay ms, retry policy JSON ('' = none), its
 * maximumAttempts ('' = none). Returns {id, duplicate (0|1)} per message.
 */
const PUBLISH = script(`
local now = ARGV[2]
local count = (#ARGV - 2) / 7
local next_id = redis.call('INCRBY', P .. ':seq', count) - count
local known = {}
local byrole = {}
for i = 3, #ARGV, 7 do
  local role = ARGV[i]
  if not byrole[role] then
    byrole[role] = {keys = {}, new = {}}
    known[role] = {}
  end
  local keys = byrole[role].keys
  keys[#keys + 1] = ARGV[i + 1]
end
for role, b in pairs(byrole) do
  local found = redis.call('HMGET', rkey(role, 'idem'), unpack(b.keys))
  for j, k in ipairs(b.keys) do
    if found[j] then known[role][k] = found[j] end
  end
end
local res = {}
for i = 3, #ARGV, 7 do
  local role, k, t, env = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local delay = tonumber(ARGV[i + 4])
  local existing = known[role][k]
  if existing then
    res[#res + 1] = {existing, 1}
  else
    next_id = next_id + 1
    local id = string.format('%d', next_id)
    known[role][k] = id
    local new = byrole[role].new
    new[#new + 1] = k
    new[#new + 1] = id
    local m = {m = id, k = k, env = env, d = '0', pa = now, t = t, rp = ARGV[i + 5], ma = ARGV[i + 6]}
    ensure_group(role)
    if delay > 0 then
      local av = string.format('%d', tonumber(now) + delay)
      m.av = av
      hold(role, m)
      redis.call('ZADD', rkey(role, 'z'), av, id)
    else
      m.av = now
      to_stream(role, m)
      ready_add(role, 1)
    end
    res[#res + 1] = {id, 0}
  end
end
for role, b in pairs(byrole) do
  if #b.new > 0 then redis.call('HSET', rkey(role, 'idem'), unpack(b.new)) end
end
flush_ready()
return res
`);

/**
 * LEASE. ARGV: P, role, now, consumer, max, visibility ms, lease id nonce,
 * maxDeliveries, default maximumAttempts, the LeaseExpired error JSON, mode
 * ('new' | 'ids' | 'recover'), orphan idle ms, then (mode 'ids') per entry a
 * blocking XREADGROUP read: its id, its number of field strings, the fields.
 *
 * Moves due delayed messages to the stream, reclaims expired leases, every
 * orphan-idle period claims (XAUTOCLAIM) entries read by a consumer that died
 * before leasing them, then leases up to max messages read with XREADGROUP
 * (parking those whose task is locked); consumer names idle for 10 orphan
 * periods with nothing pending leave the group. Returns {leases, next wake-up
 * time (-1 = none or not asked)}; a lease is {id, lease id, deliveries,
 * envelope, idempotency key, task key, published at, last error, retry
 * policy} ('' = none).
 */
const LEASE = script(`
local role = ARGV[2]
local now = tonumber(ARGV[3])
local consumer = ARGV[4]
local max = tonumber(ARGV[5])
local vt = tonumber(ARGV[6])
local nonce = ARGV[7]
local md = tonumber(ARGV[8])
local mad = tonumber(ARGV[9])
local experr = ARGV[10]
local mode = ARGV[11]
local orphan = tonumber(ARGV[12])
local s = rkey(role, 's')
local z = rkey(role, 'z')
local L = rkey(role, 'L')
local LS = rkey(role, 'ls')
ensure_group(role)

local due = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'LIMIT', 0, 1000)
if #due > 0 then
  for _, id in ipairs(due) do
    local m = take_held(role, id)
    if m then
      to_stream(role, m)
      ready_add(role, 1)
    end
  end
  redis.call('ZREM', z, unpack(due))
end

local function record(r, id)
  local j = redis.call('HGET', rkey(r, 'ls'), id)
  return j and cjson.decode(j) or nil
end

local expired = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'LIMIT', 0, 1000)
for _, id in ipairs(expired) do
  local rec = record(role, id)
  if rec then expire(role, id, rec, now, md, mad, experr) else redis.call('ZREM', L, id) end
end

local out = {}
local fresh = {}
local lsArgs, LArgs = {}, {}
local function lease(eid, m)
  local id = m.m
  local lid = nonce .. '.' .. (#out + 1)
  local u = string.format('%d', now + vt)
  local d = tonumber(m.d or '0') + 1
  local rec = {lid, u, eid, d, m.t or '', m.k, vt, m.ma or ''}
  fresh[id] = rec
  lsArgs[#lsArgs + 1] = id
  lsArgs[#lsArgs + 1] = cjson.encode(rec)
  LArgs[#LArgs + 1] = u
  LArgs[#LArgs + 1] = id
  if m.t and m.t ~= '' then redis.call('SET', tkey(m.t), 'l|' .. id .. '|' .. role) end
  ready_add(role, -1)
  out[#out + 1] = {id, lid, d, m.env, m.k, m.t or '', m.pa, m.err or '', m.rp or ''}
end

-- An entry read from the stream: lease its message, or park it behind its
-- task's lock.
local function consider(eid, m)
  local t = m.t
  if t and t ~= '' then
    local tk = tkey(t)
    local mine = 'p|' .. m.m .. '|' .. role
    local lock = redis.call('GET', tk)
    if lock and lock ~= mine then
      local kind, hid, hrole = string.match(lock, '^(%a)|(%d+)|(.*)$')
      if kind == 'l' then
        local rec = (hrole == role and fresh[hid]) or record(hrole, hid)
        if not rec then
          -- A lock whose lease is gone: free the task.
          unlock_task(t, hrole, hid)
        elseif tonumber(rec[2]) <= now then
          expire(hrole, hid, rec, now, md, mad, experr)
        end
        lock = redis.call('GET', tk)
      end
    end
    if lock and lock ~= mine then
      redis.call('RPUSH', wkey(t), m.m .. '|' .. role)
      hold(role, m)
      redis.call('XACK', s, G, eid)
      return
    end
  end
  lease(eid, m)
end

-- Entries that may already be leased (claimed or re-read pending entries).
local function consider_pending(entries)
  for _, en in ipairs(entries) do
    if #out >= max then return end
    local fields = en[2]
    if not fields then
      redis.call('XACK', s, G, en[1])
    else
      local m = parse_fields(fields)
      local rec = fresh[m.m] or record(role, m.m)
      if not rec then
        consider(en[1], m)
      elseif rec[3] ~= en[1] then
        redis.call('XACK', s, G, en[1])
      end
    end
  end
end

if mode == 'ids' then
  -- Entries a blocking XREADGROUP (this consumer, id '>') just read: fresh.
  local i = 13
  while i <= #ARGV do
    local eid, nf = ARGV[i], tonumber(ARGV[i + 1])
    local flat = {}
    for j = 1, nf do flat[j] = ARGV[i + 1 + j] end
    i = i + 2 + nf
    consider(eid, parse_fields(flat))
  end
elseif mode == 'recover' then
  local r = redis.call('XREADGROUP', 'GROUP', G, consumer, 'COUNT', 1000, 'STREAMS', s, '0')
  if r then consider_pending(r[1][2]) end
end

local scanned = tonumber(redis.call('GET', rkey(role, 'oc')) or '0')
if orphan > 0 and now - scanned >= orphan then
  redis.call('SET', rkey(role, 'oc'), ARGV[3])
  local cur = redis.call('GET', rkey(role, 'ocur')) or '0-0'
  local r = redis.call('XAUTOCLAIM', s, G, consumer, orphan, cur, 'COUNT', 100)
  redis.call('SET', rkey(role, 'ocur'), r[1])
  consider_pending(r[2])
  -- Consumer names of workers gone long ago (nothing pending) leave the group.
  for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', s, G)) do
    local name, pending, idle = nil, 0, 0
    for j = 1, #c, 2 do
      if c[j] == 'name' then name = c[j + 1] end
      if c[j] == 'pending' then pending = tonumber(c[j + 1]) end
      if c[j] == 'idle' then idle = tonumber(c[j + 1]) end
    end
    if name and name ~= consumer and pending == 0 and idle > 10 * orphan then
      redis.call('XGROUP', 'DELCONSUMER', s, G, name)
    end
  end
end

local budget = 4 * max + 100
while #out < max and budget > 0 do
  local want = max - #out
  local r = redis.call('XREADGROUP', 'GROUP', G, consumer, 'COUNT', want, 'STREAMS', s, '>')
  if not r then break end
  local entries = r[1][2]
  for _, en in ipairs(entries) do consider(en[1], parse_fields(en[2])) end
  budget = budget - #entries
  if #entries < want then break end
end

if #lsArgs > 0 then
  redis.call('HSET', LS, unpack(lsArgs))
  redis.call('ZADD', L, unpack(LArgs))
end
flush_ready()
local next = -1
if #out == 0 then
  local zf = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
  if zf[2] then next = tonumber(zf[2]) end
  local lf = redis.call('ZRANGE', L, 0, 0, 'WITHSCORES')
  if lf[2] and (next < 0 or tonumber(lf[2]) < next) then next = tonumber(lf[2]) end
end
return {out, string.format('%d', next)}
`);

/**
 * ACK. ARGV: P, idempotency retention ms, now, then triples of role, message
 * id and lease id. Returns 1|0 per triple.
 */
const ACK = script(`
local retention, now = tonumber(ARGV[2]), tonumber(ARGV[3])
local byrole = {}
local order = {}
for i = 4, #ARGV, 3 do
  local role = ARGV[i]
  if not byrole[role] then
    byrole[role] = {ids = {}, lids = {}, pos = {}}
  end
  local b = byrole[role]
  b.ids[#b.ids + 1] = ARGV[i + 1]
  b.lids[#b.lids + 1] = ARGV[i + 2]
  b.pos[#b.pos + 1] = #order + 1
  order[#order + 1] = 0
end
for role, b in pairs(byrole) do
  local recs = redis.call('HMGET', rkey(role, 'ls'), unpack(b.ids))
  local ids, entries, idx = {}, {}, {}
  for j, id in ipairs(b.ids) do
    local rec = recs[j] and cjson.decode(recs[j])
    if rec and rec[1] == b.lids[j] then
      order[b.pos[j]] = 1
      ids[#ids + 1] = id
      entries[#entries + 1] = rec[3]
      idx[#idx + 1] = ARGV[3]
      idx[#idx + 1] = rec[6]
      unlock_task(rec[5], role, id)
    end
  end
  if #ids > 0 then
    redis.call('HDEL', rkey(role, 'ls'), unpack(ids))
    redis.call('ZREM', rkey(role, 'L'), unpack(ids))
    redis.call('XACK', rkey(role, 's'), G, unpack(entries))
    redis.call('ZADD', rkey(role, 'idx'), unpack(idx))
    -- Each ack call forgets up to twice the keys it retains: the index keeps pace.
    forget(role, now - retention, 2 * #ids + 10)
    if redis.call('SET', rkey(role, 'tr'), '1', 'NX', 'PX', 1000) then trim(role) end
  end
end
return order
`);

/** HEARTBEAT. ARGV: P, role, message id, lease id, new deadline. Returns 1|0. */
const HEARTBEAT = script(`
local role, id = ARGV[2], ARGV[3]
local j = redis.call('HGET', rkey(role, 'ls'), id)
if not j then return 0 end
local rec = cjson.decode(j)
if rec[1] ~= ARGV[4] then return 0 end
rec[2] = ARGV[5]
redis.call('HSET', rkey(role, 'ls'), id, cjson.encode(rec))
redis.call('ZADD', rkey(role, 'L'), ARGV[5], id)
return 1
`);

/**
 * SETTLE (nack and release). ARGV: P, role, message id, lease id, now, kind
 * ('retry' | 'dead' | 'release'), ready time (retry), error JSON ('' on
 * release). Returns 1, or 0 when the lease is lost.
 */
const SETTLE = script(`
local role, id, now, kind, at, err = ARGV[2], ARGV[3], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local j = redis.call('HGET', rkey(role, 'ls'), id)
if not j then return 0 end
local rec = cjson.decode(j)
if rec[1] ~= ARGV[4] then return 0 end
local m = end_lease(role, id, rec)
if not m then return 1 end
if err ~= '' then m.err = err end
if kind == 'dead' then
  dead_letter(role, m, now)
elseif kind == 'retry' and tonumber(at) > tonumber(now) then
  m.av = at
  hold(role, m)
  redis.call('ZADD', rkey(role, 'z'), at, id)
else
  m.av = now
  to_stream(role, m)
  ready_add(role, 1)
end
flush_ready()
return 1
`);

/**
 * DEAD: replay or purge. ARGV: P, role, now, action ('replay' | 'purge'),
 * batch size, then message ids (none = the oldest `batch` dead letters).
 * Returns how many moved.
 */
const DEAD = script(`
local role, now, action, batch = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local dlq, dx = rkey(role, 'dlq'), rkey(role, 'dx')
local entries = {}
if #ARGV >= 6 then
  for i = 6, #ARGV do
    local e = redis.call('HGET', dx, ARGV[i])
    local r = e and redis.call('XRANGE', dlq, e, e)[1]
    if r then entries[#entries + 1] = r end
  end
else
  entries = redis.call('XRANGE', dlq, '-', '+', 'COUNT', batch)
end
local n = 0
for _, en in ipairs(entries) do
  redis.call('XDEL', dlq, en[1])
  if en[2] then
    local m = parse_fields(en[2])
    redis.call('HDEL', dx, m.m)
    if action == 'replay' then
      m.d = '0'
      m.av = now
      to_stream(role, m)
      ready_add(role, 1)
    else
      redis.call('HDEL', rkey(role, 'idem'), m.k)
      redis.call('ZREM', rkey(role, 'idx'), m.k)
    end
    n = n + 1
  end
end
flush_ready()
return n
`);

/**
 * LIST dead letters. ARGV: P, role, offset, limit. Returns {id, envelope,
 * idempotency key, task key, deliveries, last error, published at, dead at}
 * per dead letter, oldest first.
 */
const LIST_DEAD = script(`
local role, offset, limit = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local entries = redis.call('XRANGE', rkey(role, 'dlq'), '-', '+', 'COUNT', offset + limit)
local res = {}
for i = offset + 1, #entries do
  if entries[i][2] then
    local m = parse_fields(entries[i][2])
    res[#res + 1] = {m.m, m.env, m.k, m.t or '', m.d or '0', m.err or '', m.pa, m.da or '0'}
  end
end
return res
`);

/**
 * STATS. ARGV: P, role, now. Returns {depth, delayed, in flight, dead
 * letters, ready-since of the oldest message ready now (-1 = none)}.
 */
const STATS = script(`
local role, now = ARGV[2], ARGV[3]
local s, z, L = rkey(role, 's'), rkey(role, 'z'), rkey(role, 'L')
local ready = tonumber(redis.call('HGET', rkey(role, 'n'), 'ready') or '0')
if ready < 0 then ready = 0 end
local due = redis.call('ZCOUNT', z, '-inf', now)
local later = redis.call('ZCOUNT', z, '(' .. now, '+inf')
local expired = redis.call('ZCOUNT', L, '-inf', now)
local live = redis.call('ZCOUNT', L, '(' .. now, '+inf')
local dead = redis.call('XLEN', rkey(role, 'dlq'))
local oldest = -1
local function older(v)
  v = tonumber(v)
  if v and (oldest < 0 or v < oldest) then oldest = v end
end
if redis.call('EXISTS', s) == 1 then
  for _, grp in ipairs(redis.call('XINFO', 'GROUPS', s)) do
    local name, last = nil, nil
    for j = 1, #grp, 2 do
      if grp[j] == 'name' then name = grp[j + 1] end
      if grp[j] == 'last-delivered-id' then last = grp[j + 1] end
    end
    if name == G then
      local first = redis.call('XRANGE', s, '(' .. last, '+', 'COUNT', 1)[1]
      if first and first[2] then older(parse_fields(first[2]).av) end
    end
  end
end
local zf = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
if zf[2] then older(zf[2]) end
local lf = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
if lf[2] then older(lf[2]) end
return {ready + due + expired, later, live, dead, string.format('%d', oldest)}
`);

/** TRIM. ARGV: P, role. Trims the role's stream below its oldest pending entry (MINID). */
const TRIM = script(`
trim(ARGV[2])
return 1
`);

export const REDIS_SCRIPTS = {
  sbPublish: PUBLISH,
  sbLease: LEASE,
  sbAck: ACK,
  sbHeartbeat: HEARTBEAT,
  sbSettle: SETTLE,
  sbDead: DEAD,
  sbListDead: LIST_DEAD,
  sbStats: STATS,
  sbTrim: TRIM,
} satisfies Record<string, Script>;
