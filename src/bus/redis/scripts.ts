import { RESULTS_ROLE } from '../../protocol/work-envelope.js';
import { type LuaScript, luaScript, readLua } from '../../persistence/kernel/redis/lua-script.js';

/**
 * The Lua scripts of the Redis Streams work bus, in `./scripts/*.lua`: each
 * file's header declares its KEYS and ARGV and what it does atomically;
 * `library.lua` holds the helpers every script starts with (and says which
 * keys a script may derive at run time, all within the deployment's hash
 * tag). Each state change of a message (publish, lease, ack, nack, release,
 * expiry, dead-lettering, replay, purge) is one script, so it is atomic: a
 * message is never in two places, and a dead-letter move (`XADD` to the
 * role's dead-letter stream + `XACK` of the original entry) happens whole or
 * not at all. KEYS are built by `RedisKeys` (`bus/redis/keys.ts`).
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
export interface BusScripts {
  readonly publish: LuaScript;
  readonly lease: LuaScript;
  readonly ack: LuaScript;
  readonly heartbeat: LuaScript;
  readonly expireLeases: LuaScript;
  readonly generation: LuaScript;
  readonly settle: LuaScript;
  readonly dead: LuaScript;
  readonly listDead: LuaScript;
  readonly stats: LuaScript;
  readonly trim: LuaScript;
}

const FILES: Record<keyof BusScripts, string> = {
  publish: 'publish.lua',
  lease: 'lease.lua',
  ack: 'ack.lua',
  heartbeat: 'heartbeat.lua',
  expireLeases: 'expire-leases.lua',
  generation: 'generation.lua',
  settle: 'settle.lua',
  dead: 'dead.lua',
  listDead: 'list-dead.lua',
  stats: 'stats.lua',
  trim: 'trim.lua',
};

let loaded: BusScripts | undefined;

function file(name: string): string {
  // A literal `new URL('./scripts/...', import.meta.url)` per directory: the files ship beside this module.
  return readLua(new URL(`./scripts/${name}`, import.meta.url));
}

/** The bus's scripts, read from their files on first use (the library before each body). */
export function busScripts(): BusScripts {
  if (loaded === undefined) {
    const library = file('library.lua').replaceAll('{{RESULTS_ROLE}}', () => RESULTS_ROLE);
    const scripts: Partial<Record<keyof BusScripts, LuaScript>> = {};
    for (const [key, name] of Object.entries(FILES) as [keyof BusScripts, string][]) {
      scripts[key] = luaScript(name, `${library}\n${file(name)}`);
    }
    loaded = scripts as BusScripts;
  }
  return loaded;
}
