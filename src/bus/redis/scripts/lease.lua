-- lease.lua: LEASE up to max messages of one role for one consumer.
--
-- KEYS[1]      {p}:seq    message id counter (dead-letter notices)
-- KEYS[2]      {p}:roles  roles seen
-- KEYS[3..14]  the role's key group (library.lua, ROLE_KEYS)
-- ARGV[1]      role
-- ARGV[2]      now (client clock, ms)
-- ARGV[3]      consumer name
-- ARGV[4]      max deliveries to return
-- ARGV[5]      visibility timeout ms
-- ARGV[6]      the role's maxDeliveries
-- ARGV[7]      the role's default maximumAttempts
-- ARGV[8]      the LeaseExpired error JSON
-- ARGV[9]      mode: 'ids' | 'recover'
-- ARGV[10]     orphan idle ms (0: no orphan scan); with ':now' after it, the
--              scan runs now and claims every entry another consumer read but
--              did not lease, however briefly idle (a role taken over from a
--              dead consumer)
-- ARGV[11...]  (mode 'ids') per entry the caller read with a blocking
--              XREADGROUP '>' for this consumer: its entry id, message id,
--              idempotency key and task key ('' = none)
-- Returns {leases, next wake-up time (-1 = none or not asked)}; a lease is
-- {entry id, lease token, the entry's fields (left out for the entries given,
-- which the caller has)}.
--
-- Moves due delayed messages to the stream, reclaims expired leases, leases
-- the entries given (mode 'ids') or this consumer's pending entries that no
-- lease covers (mode 'recover': its last read failed), every orphan-idle
-- period (or now, with ':now') claims (XAUTOCLAIM) entries read by a consumer
-- that died before leasing them, then tops the batch up to max with XREADGROUP; messages whose
-- task is locked are parked. Consumer names idle for 10 orphan periods with
-- nothing pending leave the group.
--
-- Atomic: a message is leased to one consumer at a time; its lease, its task
-- lock and the ready count change together; an expired lease is redelivered
-- or dead-lettered (with its failure result) whole.
-- Derived keys (library.lua): the locks and waiting lists of the tasks of the
-- entries read; the keys of the role holding a task's lock (an expired or
-- vanished lease of another role frees the task); the roles of messages
-- waiting for a freed task; the result role of a message dead-lettered here.

local role = ARGV[1]
local now = tonumber(ARGV[2])
local consumer = ARGV[3]
local max = tonumber(ARGV[4])
local vt = tonumber(ARGV[5])
local md = tonumber(ARGV[6])
local mad = tonumber(ARGV[7])
local experr = ARGV[8]
local mode = ARGV[9]
local orphan_now = string.sub(ARGV[10], -4) == ':now'
local orphan = tonumber(orphan_now and string.sub(ARGV[10], 1, -5) or ARGV[10])
bind_role(role, 3)
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
  for i = 11, #ARGV, 4 do
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
if orphan > 0 and (orphan_now or now - scanned >= orphan) then
  redis.call('SET', rkey(role, 'oc'), ARGV[2])
  local cur = orphan_now and '0-0' or redis.call('GET', rkey(role, 'ocur')) or '0-0'
  local r = redis.call('XAUTOCLAIM', s, G, consumer, orphan_now and 0 or orphan, cur, 'COUNT', orphan_now and max or 100)
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
