import { type CommandParser, defineScript } from 'redis';
import { RESULTS_ROLE } from '../../protocol/work-envelope.js';

/**
 * The Lua scripts of the Redis Streams work bus. Each state change of a
 * message (publish, lease, ack, nack, release, expiry, dead-lettering, replay,
 * purge) is one script, so it is atomic: a message is never in two places,
 * and a dead-letter move (`XADD` to the role's dead-letter stream + `XACK` of
 * the original entry) happens whole or not at all.
 *
 * Every script takes the hash tag `{prefix}` as ARGV[1] and builds its key
 * names from it (the layout is in `bus/redis/keys.ts`); KEYS[1] is one key of the
 * deployment, which routes the call to the slot all of them share.
 *
 * A message travels whole in its stream entry (fields x = `<id>|<deliveries
 * so far>|<published at>|<ready since>`, k = idempotency key, env = envelope
 * JSON, and when set t = task key, err = last error JSON, rp = retry policy
 * override JSON, ma = its maximumAttempts, always in this order, so the hot
 * path reads them by position; the few fields keep an entry cheap to write,
 * read and hand over). While it is leased, its entry stays
 * pending and its lease is one member of the role's lease set, scored by its
 * deadline: the lease token `<entry id>|<task part>|<idempotency key>`
 * (task part '' without a task key, else `<length>:<task key>`). The token is
 * the delivery's `leaseId`: an entry is leased at most once (every end of a
 * lease XACKs its entry in the same script, and a redelivery is a new entry),
 * so a token names one lease, and a lease is live exactly while its token is
 * in the set. While delayed or waiting for its task, the message (JSON) sits
 * in the role's held hash; when dead, in the role's dead-letter stream. So the
 * hot path (publish, lease, ack) costs one `XADD` per message and a few
 * commands per batch, like raw Streams.
 *
 * Times (`now`, deadlines, ready times) come from the client's clock, never
 * the server's, so an injected clock governs delays and leases; only two
 * throttles use server time (`PX`).
 */

const LIBRARY = `
local P = ARGV[1]
local RESULTS_ROLE = '${RESULTS_ROLE}'
local G = 'g'
local function rkey(role, s) return P .. ':r:' .. role .. ':' .. s end
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
    .. ',"deliveries":' .. string.format('%d', math.max(1, d)) .. '}'
  local id = string.format('%d', redis.call('INCR', P .. ':seq'))
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
 * PUBLISH. ARGV: P, now, then per message: role, idempotency key, delay ms,
 * the x field's value after the id ('|<deliveries>|<published at>|<ready
 * since>'), n, then the message's other n entry field strings in entry order
 * (k, env, then t, rp, ma when set). Returns, flat, per message: its id and 1
 * when it was a duplicate (the first id), else 0.
 */
const PUBLISH = script(`
local now = ARGV[2]
local count = 0
local i = 3
while i <= #ARGV do
  count = count + 1
  i = i + 5 + tonumber(ARGV[i + 4])
end
local next_id = redis.call('INCRBY', P .. ':seq', count) - count
local known = {}
local byrole = {}
i = 3
while i <= #ARGV do
  local role = ARGV[i]
  local b = byrole[role]
  if not b then
    b = {keys = {}, new = {}, ready = 0}
    byrole[role] = b
    known[role] = {}
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
i = 3
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
`);

/**
 * LEASE. ARGV: P, role, now, consumer, max, visibility ms, maxDeliveries,
 * default maximumAttempts, the LeaseExpired error JSON, mode ('ids' |
 * 'recover'), orphan idle ms, then (mode 'ids') per entry the caller read
 * with a blocking XREADGROUP '>' for this consumer, if any: its entry id,
 * message id, idempotency key and task key ('' = none).
 *
 * Moves due delayed messages to the stream, reclaims expired leases, leases
 * the entries given (mode 'ids') or this consumer's pending entries that no
 * lease covers (mode 'recover': its last read failed), every orphan-idle
 * period claims (XAUTOCLAIM) entries read by a consumer that died before
 * leasing them, then tops the batch up to max with XREADGROUP; messages whose
 * task is locked are parked. Consumer names idle for 10 orphan periods with
 * nothing pending leave the group. Returns {leases, next wake-up time (-1 =
 * none or not asked)}; a lease is {entry id, lease token, the entry's fields
 * (left out for the entries given, which the caller has)}.
 */
const LEASE = script(`
local role = ARGV[2]
local now = tonumber(ARGV[3])
local consumer = ARGV[4]
local max = tonumber(ARGV[5])
local vt = tonumber(ARGV[6])
local md = tonumber(ARGV[7])
local mad = tonumber(ARGV[8])
local experr = ARGV[9]
local mode = ARGV[10]
local orphan = tonumber(ARGV[11])
local s = rkey(role, 's')
local z = rkey(role, 'z')
local L = rkey(role, 'L')
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

local expired = redis.call('ZRANGEBYSCORE', L, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
for j = 1, #expired, 2 do
  expire(role, expired[j], expired[j + 1], now, md, mad, experr)
end

local out = {}
local leased = 0
-- Tokens leased by this call, with their deadline.
local fresh = {}
local deadline = string.format('%d', now + vt)
local LArgs = {}

-- Leases the message of entry eid (key k, task t): out gets {eid, token, flat}.
local function lease(eid, k, t, flat)
  local tok = token(eid, t, k)
  fresh[tok] = deadline
  LArgs[#LArgs + 1] = deadline
  LArgs[#LArgs + 1] = tok
  if t ~= '' then redis.call('SET', tkey(t), held_by(role, tok)) end
  leased = leased + 1
  out[#out + 1] = {eid, tok, flat}
end

-- A message with a task key: lease it, or park it behind its task's lock.
-- m: its fields; flat: as returned (nil for mode 'ids').
local function consider_task(eid, m, flat)
  local t = m.t
  local tk = tkey(t)
  local mine = 'p|' .. m.m .. '|' .. role
  local lock = redis.call('GET', tk)
  if lock and lock ~= mine then
    local hrole, htok = string.match(lock, '^l|([^|]+)|(.*)$')
    if hrole then
      local dl = (hrole == role and fresh[htok]) or redis.call('ZSCORE', rkey(hrole, 'L'), htok)
      if not dl then
        -- A lock whose lease is gone: free the task.
        unlock_task(t, hrole, htok)
      elseif tonumber(dl) <= now then
        expire(hrole, htok, dl, now, md, mad, experr)
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
  lease(eid, m.k, t, flat)
end

-- An entry read from the stream ({entry id, fields}): entries without a task
-- key (fields in entry order, t the first optional one) are leased at once.
local function consider(en)
  local flat = en[2]
  if flat[1] == 'x' and flat[3] == 'k' and flat[5] == 'env' and flat[7] ~= 't' then
    lease(en[1], flat[4], '', flat)
    return
  end
  local m = parse_fields(flat)
  if not m.m or not m.k then
    redis.call('XACK', s, G, en[1])
  elseif m.t and m.t ~= '' then
    consider_task(en[1], m, flat)
  else
    lease(en[1], m.k, '', flat)
  end
end

-- Entries that may already be leased (claimed or re-read pending entries).
local function consider_pending(entries)
  for _, en in ipairs(entries) do
    if #out >= max then return end
    if not en[2] then
      redis.call('XACK', s, G, en[1])
    else
      local m = parse_fields(en[2])
      local tok = m.k and token(en[1], m.t, m.k)
      if not tok or not (fresh[tok] or redis.call('ZSCORE', L, tok)) then consider(en) end
    end
  end
end

if mode == 'ids' then
  -- Entries a blocking XREADGROUP (this consumer, id '>') just read: fresh.
  for i = 12, #ARGV, 4 do
    local eid, id, k, t = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
    if id == '' or k == '' then
      redis.call('XACK', s, G, eid)
    elseif t == '' then
      lease(eid, k, '')
    else
      local r = redis.call('XRANGE', s, eid, eid)[1]
      if r and r[2] then
        consider_task(eid, parse_fields(r[2]))
      else
        redis.call('XACK', s, G, eid)
      end
    end
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
  for _, en in ipairs(entries) do
    if en[2] then consider(en) else redis.call('XACK', s, G, en[1]) end
  end
  budget = budget - #entries
  if #entries < want then break end
end

if #LArgs > 0 then redis.call('ZADD', L, unpack(LArgs)) end
ready_add(role, -leased)
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
 * ACK. ARGV: P, idempotency retention ms, now, then pairs of role and lease
 * token. Returns 1|0 per pair.
 */
const ACK = script(`
local retention, now = tonumber(ARGV[2]), tonumber(ARGV[3])
local byrole = {}
local order = {}
for i = 4, #ARGV, 2 do
  local role = ARGV[i]
  local b = byrole[role]
  if not b then
    b = {toks = {}, pos = {}}
    byrole[role] = b
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
    redis.call('RPUSH', rkey(role, 'ix'), ARGV[3] .. '|' .. cjson.encode(keys))
    -- Each ack call forgets at least twice the keys it retains (when that
    -- many are due): the list keeps pace.
    forget(role, now - retention, 2 * #keys)
    if redis.call('SET', rkey(role, 'tr'), '1', 'NX', 'PX', 1000) then trim(role) end
  end
end
return order
`);

/** HEARTBEAT. ARGV: P, role, lease token, new deadline. Returns 1|0. */
const HEARTBEAT = script(`
local L = rkey(ARGV[2], 'L')
if not redis.call('ZSCORE', L, ARGV[3]) then return 0 end
redis.call('ZADD', L, 'XX', ARGV[4], ARGV[3])
return 1
`);

/**
 * SETTLE (nack and release). ARGV: P, role, lease token, now, kind ('retry' |
 * 'dead' | 'release'), ready time (retry), error JSON ('' on release).
 * Returns 1, or 0 when the lease is lost.
 */
const SETTLE = script(`
local role, tok, now, kind, at, err = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
if not redis.call('ZSCORE', rkey(role, 'L'), tok) then return 0 end
local m = end_lease(role, tok)
if not m then return 1 end
if err ~= '' then m.err = err end
if kind == 'dead' then
  dead_letter(role, m, now)
elseif kind == 'retry' and tonumber(at) > tonumber(now) then
  m.av = at
  hold(role, m)
  redis.call('ZADD', rkey(role, 'z'), at, m.m)
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
      -- A dead letter was never acked: its key is in no retention list.
      redis.call('HDEL', rkey(role, 'idem'), m.k)
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
