import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayRefusal } from '../../src/gateway/gateway-errors.js';
import { GatewayError } from '../../src/gateway/gateway-keys.js';
import {
  MAX_PUSH_CONFIGS_PER_TASK,
  PushStore,
  checkPushConfig,
  pushFileOf,
} from '../../src/gateway/gateway-push-store.js';

const dirs: string[] = [];
const dir = () => {
  const d = mkdtempSync(join(tmpdir(), 'sb-push-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Anything a client might send as a config. */
const anyConfig = fc.record(
  {
    id: fc.oneof(fc.string(), fc.string({ minLength: 120, maxLength: 140 }), fc.integer()),
    url: fc.oneof(
      fc.webUrl(),
      fc.constantFrom('ftp://x/y', 'file:///etc/passwd', 'javascript:alert(1)', 'http://', 'not a url', ''),
      fc.string(),
      fc.integer(),
    ),
    token: fc.oneof(fc.string(), fc.constant('a\r\nb'), fc.string({ minLength: 1020, maxLength: 1030 })),
    authentication: fc.record(
      { scheme: fc.oneof(fc.constantFrom('Bearer', 'Basic', 'x y', ''), fc.string()), credentials: fc.string() },
      { requiredKeys: ['scheme'] },
    ),
  },
  { requiredKeys: [] },
);

describe('checkPushConfig', () => {
  test.prop([anyConfig])('keeps only bounded http(s) configs; refuses the rest with -32602', (raw) => {
    let config: ReturnType<typeof checkPushConfig>;
    try {
      config = checkPushConfig(raw, 'task-1');
    } catch (error) {
      expect(error).toBeInstanceOf(GatewayRefusal);
      expect((error as GatewayRefusal).code).toBe(-32602);
      expect((error as Error).message).toMatch(/send|must|needs/);
      return;
    }
    expect(['http:', 'https:']).toContain(new URL(config.url).protocol);
    expect(config.url.length).toBeLessThanOrEqual(2048);
    expect(config.id.length).toBeGreaterThan(0);
    expect(config.id.length).toBeLessThanOrEqual(128);
    expect(config.taskId).toBe('task-1');
    expect(config.token ?? '').not.toMatch(/[\r\n]/);
    expect((config.token ?? '').length).toBeLessThanOrEqual(1024);
    if (config.authentication !== undefined) {
      expect(config.authentication.scheme).toMatch(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/);
      expect(config.authentication.credentials ?? '').not.toMatch(/[\r\n]/);
    }
  });
});

describe('PushStore', () => {
  it('keeps configs in its file across a reopen, per key and task, and bounds a task', () => {
    const file = pushFileOf(join(dir(), 'b.gateway-keys.json'));
    expect(file.endsWith('b.gateway-push.json')).toBe(true);
    const store = new PushStore(file);
    for (let i = 0; i < MAX_PUSH_CONFIGS_PER_TASK; i++) {
      store.put('alice', checkPushConfig({ id: `c${i}`, url: 'http://127.0.0.1:9/h' }, 't1'));
    }
    expect(() => store.put('alice', checkPushConfig({ id: 'more', url: 'http://127.0.0.1:9/h' }, 't1'))).toThrow(
      /delete one first/,
    );
    // Replacing by id is not adding.
    store.put('alice', checkPushConfig({ id: 'c0', url: 'https://example.com/new' }, 't1'));
    store.put('bob', checkPushConfig({ id: 'c0', url: 'http://127.0.0.1:9/bob' }, 't1'));
    const reopened = new PushStore(file);
    expect(reopened.list('alice', 't1')).toHaveLength(MAX_PUSH_CONFIGS_PER_TASK);
    expect(reopened.get('alice', 't1', 'c0')?.url).toBe('https://example.com/new');
    expect(reopened.get('bob', 't1', 'c0')?.url).toBe('http://127.0.0.1:9/bob');
    expect(reopened.list('carol', 't1')).toEqual([]);
    expect(reopened.delete('alice', 't1', 'c0')).toBe(true);
    expect(reopened.delete('alice', 't1', 'c0')).toBe(false);
    expect(new PushStore(file).list('alice', 't1')).toHaveLength(MAX_PUSH_CONFIGS_PER_TASK - 1);
    expect(reopened.keys().sort()).toEqual(['alice', 'bob']);
  });

  it('refuses a damaged file with GATEWAY_PUSH_FILE, and leaves it as it is', () => {
    const file = join(dir(), 'x.gateway-push.json');
    for (const text of ['{not json', 'null', '{"gatewayPush":2,"configs":[]}', '[]']) {
      writeFileSync(file, text);
      let caught: unknown;
      try {
        new PushStore(file);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(GatewayError);
      expect((caught as GatewayError).code).toBe('GATEWAY_PUSH_FILE');
      expect(readFileSync(file, 'utf8')).toBe(text);
    }
  });
});

describe('the push store’s cursors', () => {
  const config = (taskId: string) => checkPushConfig({ url: 'http://127.0.0.1:9/hook', id: 'c' }, taskId);

  it('moves forward only, is written with the next change or a flush, and read back', () => {
    const file = join(dir(), 'x.gateway-push.json');
    const store = new PushStore(file);
    store.put('alice', config('t1'));
    store.advance('alice', 5);
    store.advance('alice', 3);
    expect(store.cursor('alice')).toBe(5);
    // Not written yet: a crash now replays from the cursor written last (none).
    expect(new PushStore(file).cursor('alice')).toBeUndefined();
    store.flush();
    expect(new PushStore(file).cursor('alice')).toBe(5);
    store.advance('alice', 9);
    store.put('alice', config('t2'));
    expect(new PushStore(file).cursor('alice')).toBe(9);
    expect(store.cursor('bob')).toBeUndefined();
  });

  it("drops a revoked key's cursor with its configs", () => {
    const file = join(dir(), 'x.gateway-push.json');
    const store = new PushStore(file);
    store.put('alice', config('t1'));
    store.advance('alice', 4);
    store.flush();
    expect(store.deleteKey('alice')).toBe(1);
    expect(new PushStore(file).cursor('alice')).toBeUndefined();
  });

  it('keeps a cursor only while its key holds configs', () => {
    const file = join(dir(), 'x.gateway-push.json');
    const store = new PushStore(file);
    store.advance('alice', 3);
    expect(store.cursor('alice')).toBeUndefined();
    store.put('alice', config('t1'));
    store.advance('alice', 3);
    store.flush();
    expect(new PushStore(file).cursor('alice')).toBe(3);
    // Its last config deleted: its cursor goes too, and a later first config starts one anew.
    expect(store.delete('alice', 't1', 'c')).toBe(true);
    expect(store.cursor('alice')).toBeUndefined();
    expect(new PushStore(file).cursor('alice')).toBeUndefined();
    store.advance('alice', 8);
    expect(store.cursor('alice')).toBeUndefined();
  });

  it('reads a file without cursors, or with bad ones, as having none', () => {
    const file = join(dir(), 'x.gateway-push.json');
    writeFileSync(file, JSON.stringify({ gatewayPush: 1, configs: [] }));
    expect(new PushStore(file).cursor('alice')).toBeUndefined();
    writeFileSync(file, JSON.stringify({ gatewayPush: 1, configs: [], cursors: { a: -1, b: 1.5, c: 'x', d: 7 } }));
    const store = new PushStore(file);
    expect(['a', 'b', 'c', 'd'].map((k) => store.cursor(k))).toEqual([undefined, undefined, undefined, 7]);
  });
});
