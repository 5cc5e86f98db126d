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
 * Message hash fields: role, k (idempotency key), t (task key), env (envelope
 * JSON), d (deliveries), pa (published at), av (ready since), err (last error
 * JSON), rp (retry policy override JSON), ma (its maximumAttempts), st (state:
 * r = in the stream, w = waiting for its task, z = delayed, l = leased,
 * x = dead), e (stream entry id while in the stream or leased), l (lease id),
 * c (consumer), u (lease deadline), vt (visibility timeout), da (dead at),
 * dx (dead-letter entry id).
 *
 * Times (`now`, deadlines, ready times) come from the client's clock, never
 * the server's, so an injected clock governs delays and leases; only the
 * idempotency retention and two throttles use server time (`PX`).
 */

const LIBRARY = `
local P = ARGV[1]
local G = 'g'
local function mkey(id) return P .. ':m:' .. id end
local function rkey(role, s) return P .. ':r:' .. role .. ':' .. s end
local function tkey(t) return P .. ':t:' .. t end
local function wkey(t) return P .. ':tw:' .. t end
local function ikey(role, k) return P .. ':i:' .. role .. ':' .. k end

local function ensure_group(role)
  local s = rkey(role, 's')
  if redis.call('EXISTS', s) == 0 then
    redis.call('XGROUP', 'CREATE', s, G, '0', 'MKSTREAM')
    redis.call('SADD', P .. ':roles', role)
  end
  return s
end

local function ready_add(role, n)
  redis.call('HINCRBY', rkey(role, 'n'), 'ready', n)
end

-- Appends a message to its role's stream: ready now.
local function to_stream(id, role, av)
  local s = ensure_group(role)
  local e = redis.call('XADD', s, '*', 'm', id)
  redis.call('HSET', mkey(id), 'st', 'r', 'e', e, 'av', av)
end

-- Frees the task lock held by message id: the oldest waiting message of the
-- task goes back to its role's stream with the lock reserved for it.
local function unlock_task(t, id)
  if not t then return end
  local tk = tkey(t)
  if redis.call('GET', tk) ~= ('l:' .. id) then return end
  while true do
    local nxt = redis.call('LPOP', wkey(t))
    if not nxt then
      redis.call('DEL', tk)
      return
    end
    local f = redis.call('HMGET', mkey(nxt), 'role', 'av', 'st')
    if f[1] and f[3] == 'w' then
      to_stream(nxt, f[1], f[2])
      redis.call('SET', tk, 'p:' .. nxt)
      return
    end
  end
end

-- Ends the lease of a leased message: out of the lease set and the pending
-- entry list, its task freed.
local function end_lease(id, role, e, t)
  redis.call('ZREM', rkey(role, 'L'), id)
  if e then redis.call('XACK', rkey(role, 's'), G, e) end
  redis.call('HDEL', mkey(id), 'l', 'c', 'u', 'e')
  unlock_task(t, id)
end

local function dead_letter(id, role, err, now)
  local dx = redis.call('XADD', rkey(role, 'dlq'), '*', 'm', id)
  redis.call('HSET', mkey(id), 'st', 'x', 'err', err, 'da', now, 'dx', dx)
end

-- An expired lease: redelivered, or dead-lettered when out of attempts.
local function expire(id, role, now, md, mad, err)
  local h = mkey(id)
  local f = redis.call('HMGET', h, 'st', 'role', 'e', 't', 'd', 'ma', 'u')
  if f[1] ~= 'l' then
    redis.call('ZREM', rkey(role, 'L'), id)
    return
  end
  role = f[2]
  end_lease(id, role, f[3], f[4])
  local d = tonumber(f[5])
  local ma = tonumber(f[6] or mad)
  if d >= md or (ma > 0 and d >= ma) then
    dead_letter(id, role, err, now)
  else
    redis.call('HSET', h, 'err', err)
    to_stream(id, role, f[7])
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
local res = {}
local ensured = {}
local added = {}
for i = 3, #ARGV, 7 do
  local role, k, t, env = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local delay, rp, ma = tonumber(ARGV[i + 4]), ARGV[i + 5], ARGV[i + 6]
  local ik = ikey(role, k)
  local existing = redis.call('GET', ik)
  if existing then
    res[#res + 1] = {existing, 1}
  else
    local id = tostring(redis.call('INCR', P .. ':seq'))
    redis.call('SET', ik, id)
    local fields = {'role', role, 'k', k, 'env', env, 'd', '0', 'pa', ARGV[2]}
    if t ~= '' then fields[#fields + 1] = 't'; fields[#fields + 1] = t end
    if rp ~= '' then fields[#fields + 1] = 'rp'; fields[#fields + 1] = rp end
    if ma ~= '' then fields[#fields + 1] = 'ma'; fields[#fields + 1] = ma end
    if not ensured[role] then
      ensure_group(role)
      ensured[role] = true
    end
    if delay > 0 then
      local av = string.format('%d', tonumber(ARGV[2]) + delay)
      fields[#fields + 1] = 'st'; fields[#fields + 1] = 'z'
      fields[#fields + 1] = 'av'; fields[#fields + 1] = av
      redis.call('HSET', mkey(id), unpack(fields))
      redis.call('ZADD', rkey(role, 'z'), av, id)
    else
      local e = redis.call('XADD', rkey(role, 's'), '*', 'm', id)
      fields[#fields + 1] = 'st'; fields[#fields + 1] = 'r'
      fields[#fields + 1] = 'e'; fields[#fields + 1] = e
      fields[#fields + 1] = 'av'; fields[#fields + 1] = ARGV[2]
      redis.call('HSET', mkey(id), unpack(fields))
      added[role] = (added[role] or 0) + 1
    end
    res[#res + 1] = {id, 0}
  end
end
for role, n in pairs(added) do ready_add(role, n) end
return res
`);

/**
 * LEASE. ARGV: P, role, now, consumer, max, visibility ms, lease id nonce,
 * maxDeliveries, default maximumAttempts, the LeaseExpired error JSON, mode
 * ('new' | 'ids' | 'recover'), orphan idle ms, then (mode 'ids') pairs of
 * stream entry id and message id already read by a blocking XREADGROUP.
 *
 * Moves due delayed messages to the stream, reclaims expired leases, every
 * orphan-idle period claims (XAUTOCLAIM) entries read by a consumer that died
 * before leasing them, then leases up to max messages read with XREADGROUP
 * (parking those whose task is locked); consumer names idle for 10 orphan
 * periods with nothing pending leave the group. Returns {leases, next wake-up time
 * (-1 = none)}; a lease is {id, lease id, deliveries, envelope, idempotency
 * key, task key, published at, last error, retry policy} ('' = none).
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
local s = ensure_group(role)
local z = rkey(role, 'z')
local L = rkey(role, 'L')

for _, id in ipairs(redis.call('ZRANGEBYSCORE', z, '-inf', now, 'LIMIT', 0, 1000)) do
  redis.call('ZREM', z, id)
  local f = redis.call('HMGET', mkey(id), 'av', 'st')
  if f[1] and f[2] == 'z' then
    to_stream(id, role, f[1])
    ready_add(role, 1)
  end
end

for _, id in ipairs(redis.call('ZRANGEBYSCORE', L, '-inf', now, 'LIMIT', 0, 1000)) do
  expire(id, role, now, md, mad, experr)
end

local out = {}
local taken = 0
-- f: HMGET of st, e, t, env, k, pa, err, rp, d
local function lease(id, h, f)
  local lid = nonce .. '.' .. (#out + 1)
  local u = string.format('%d', now + vt)
  local d = tonumber(f[9]) + 1
  redis.call('HSET', h, 'st', 'l', 'd', d, 'l', lid, 'c', consumer, 'u', u, 'vt', vt)
  redis.call('ZADD', L, u, id)
  if f[3] then redis.call('SET', tkey(f[3]), 'l:' .. id) end
  taken = taken + 1
  out[#out + 1] = {id, lid, d, f[4], f[5], f[3] or '', f[6], f[7] or '', f[8] or ''}
end

-- An entry read from the stream: lease its message, park it behind its
-- task's lock, or drop a stale entry.
local function consider(eid, id)
  if not id then
    redis.call('XACK', s, G, eid)
    return
  end
  local h = mkey(id)
  local f = redis.call('HMGET', h, 'st', 'e', 't', 'env', 'k', 'pa', 'err', 'rp', 'd')
  if f[2] ~= eid then
    redis.call('XACK', s, G, eid)
    return
  end
  if f[1] ~= 'r' then return end
  local t = f[3]
  if t then
    local tk = tkey(t)
    local mine = 'p:' .. id
    local lock = redis.call('GET', tk)
    if lock and lock ~= mine then
      local holder = string.sub(lock, 3)
      local hf = redis.call('HMGET', mkey(holder), 'st', 'u', 'role')
      if string.sub(lock, 1, 2) == 'l:' and hf[1] == 'l' and tonumber(hf[2]) <= now then
        expire(holder, hf[3], now, md, mad, experr)
      elseif (string.sub(lock, 1, 2) == 'l:' and hf[1] ~= 'l') or (string.sub(lock, 1, 2) == 'p:' and hf[1] ~= 'r') then
        redis.call('SET', tk, 'l:' .. holder)
        unlock_task(t, holder)
      end
      lock = redis.call('GET', tk)
    end
    if lock and lock ~= mine then
      redis.call('RPUSH', wkey(t), id)
      redis.call('HSET', h, 'st', 'w')
      redis.call('HDEL', h, 'e')
      redis.call('XACK', s, G, eid)
      return
    end
  end
  lease(id, h, f)
end

local function consider_entries(entries)
  for _, en in ipairs(entries) do
    if #out >= max then return end
    local fields = en[2]
    consider(en[1], fields and fields[2] or nil)
  end
end

local scanned = tonumber(redis.call('GET', rkey(role, 'oc')) or '0')
if orphan > 0 and now - scanned >= orphan then
  redis.call('SET', rkey(role, 'oc'), ARGV[3])
  local cur = redis.call('GET', rkey(role, 'ocur')) or '0-0'
  local r = redis.call('XAUTOCLAIM', s, G, consumer, orphan, cur, 'COUNT', 100)
  redis.call('SET', rkey(role, 'ocur'), r[1])
  consider_entries(r[2])
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

if mode == 'ids' then
  for i = 13, #ARGV, 2 do
    if #out < max then consider(ARGV[i], ARGV[i + 1]) end
  end
elseif mode == 'recover' then
  local r = redis.call('XREADGROUP', 'GROUP', G, consumer, 'COUNT', 1000, 'STREAMS', s, '0')
  if r then consider_entries(r[1][2]) end
end

local budget = 4 * max + 100
while #out < max and budget > 0 do
  local want = max - #out
  local r = redis.call('XREADGROUP', 'GROUP', G, consumer, 'COUNT', want, 'STREAMS', s, '>')
  if not r then break end
  local entries = r[1][2]
  consider_entries(entries)
  budget = budget - #entries
  if #entries < want then break end
end

if taken > 0 then ready_add(role, -taken) end
local next = -1
local zf = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
if zf[2] then next = tonumber(zf[2]) end
local lf = redis.call('ZRANGE', L, 0, 0, 'WITHSCORES')
if lf[2] and (next < 0 or tonumber(lf[2]) < next) then next = tonumber(lf[2]) end
return {out, string.format('%d', next)}
`);

/** ACK. ARGV: P, idempotency retention ms, then pairs of message id and lease id. Returns 1|0 per pair. */
const ACK = script(`
local res = {}
local roles = {}
for i = 3, #ARGV, 2 do
  local id, lid = ARGV[i], ARGV[i + 1]
  local h = mkey(id)
  local f = redis.call('HMGET', h, 'st', 'l', 'role', 'e', 't', 'k')
  if f[1] == 'l' and f[2] == lid then
    local r = roles[f[3]]
    if not r then
      r = {ids = {}, entries = {}}
      roles[f[3]] = r
    end
    r.ids[#r.ids + 1] = id
    if f[4] then r.entries[#r.entries + 1] = f[4] end
    redis.call('DEL', h)
    redis.call('PEXPIRE', ikey(f[3], f[6]), ARGV[2])
    if f[5] then unlock_task(f[5], id) end
    res[#res + 1] = 1
  else
    res[#res + 1] = 0
  end
end
for role, r in pairs(roles) do
  redis.call('ZREM', rkey(role, 'L'), unpack(r.ids))
  if #r.entries > 0 then redis.call('XACK', rkey(role, 's'), G, unpack(r.entries)) end
  if redis.call('SET', rkey(role, 'tr'), '1', 'NX', 'PX', 1000) then trim(role) end
end
return res
`);

/** HEARTBEAT. ARGV: P, message id, lease id, new deadline. Returns 1|0. */
const HEARTBEAT = script(`
local h = mkey(ARGV[2])
local f = redis.call('HMGET', h, 'st', 'l', 'role')
if f[1] ~= 'l' or f[2] ~= ARGV[3] then return 0 end
redis.call('HSET', h, 'u', ARGV[4])
redis.call('ZADD', rkey(f[3], 'L'), ARGV[4], ARGV[2])
return 1
`);

/**
 * SETTLE (nack and release). ARGV: P, message id, lease id, now, kind
 * ('retry' | 'dead' | 'release'), ready time (retry), error JSON ('' on
 * release). Returns 1, or 0 when the lease is lost.
 */
const SETTLE = script(`
local id, now, kind, at, err = ARGV[2], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local h = mkey(id)
local f = redis.call('HMGET', h, 'st', 'l', 'role', 'e', 't')
if f[1] ~= 'l' or f[2] ~= ARGV[3] then return 0 end
local role = f[3]
end_lease(id, role, f[4], f[5])
if kind == 'dead' then
  dead_letter(id, role, err, now)
  return 1
end
if err ~= '' then redis.call('HSET', h, 'err', err) end
if kind == 'retry' and tonumber(at) > tonumber(now) then
  redis.call('HSET', h, 'st', 'z', 'av', at)
  redis.call('ZADD', rkey(role, 'z'), at, id)
else
  to_stream(id, role, now)
  ready_add(role, 1)
end
return 1
`);

/**
 * DEAD: replay or purge. ARGV: P, role, now, action ('replay' | 'purge'),
 * batch size, then message ids (none = the oldest `batch` dead letters).
 * Returns how many moved.
 */
const DEAD = script(`
local role, now, action, batch = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local dlq = rkey(role, 'dlq')
local ids = {}
if #ARGV >= 6 then
  for i = 6, #ARGV do ids[#ids + 1] = ARGV[i] end
else
  for _, en in ipairs(redis.call('XRANGE', dlq, '-', '+', 'COUNT', batch)) do
    local fields = en[2]
    if fields and fields[2] then
      ids[#ids + 1] = fields[2]
    else
      redis.call('XDEL', dlq, en[1])
    end
  end
end
local n = 0
for _, id in ipairs(ids) do
  local h = mkey(id)
  local f = redis.call('HMGET', h, 'st', 'role', 'dx', 'k')
  if f[1] == 'x' and f[2] == role then
    redis.call('XDEL', dlq, f[3])
    if action == 'replay' then
      redis.call('HSET', h, 'd', 0)
      redis.call('HDEL', h, 'da', 'dx')
      to_stream(id, role, now)
      ready_add(role, 1)
    else
      redis.call('DEL', h, ikey(role, f[4]))
    end
    n = n + 1
  end
end
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
  local fields = entries[i][2]
  local id = fields and fields[2]
  if id then
    local f = redis.call('HMGET', mkey(id), 'env', 'k', 't', 'd', 'err', 'pa', 'da')
    if f[1] then
      res[#res + 1] = {id, f[1], f[2], f[3] or '', f[4], f[5] or '', f[6], f[7] or '0'}
    end
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
      if first and first[2] and first[2][2] then older(redis.call('HGET', mkey(first[2][2]), 'av')) end
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
