/**
 * Agent names a model sees as `from`: normalized to NFKC, refused when they
 * hold invisible or control characters, are blank or mix confusable scripts,
 * and compared folded (NFKC, lower case) for uniqueness and addressing.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_NAME_RULE, agentNameSkeleton, foldAgentName } from '../../src/protocol/agent.js';
import { skeleton } from '../../src/protocol/confusables/skeleton.js';
import { CONFUSABLES_VERSION, PROTOTYPE_COUNT } from '../../src/protocol/confusables/table.js';
/** The in-process code of a refusal that goes out on the wire as -32602. */
const INVALID_PARAMS = 'INVALID_PARAMS';
import { LEAD_LOOK_ALIKES } from './look-alike-names.js';
import { type Harness, expectRefusedUnchanged, harness, register, settle, text } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Look-alikes of `bob` and other names no model should see as a sender. */
const REFUSED_NAMES: [string, string][] = [
  ['bob\u200b', 'zero-width space'],
  ['\u202ebob', 'right-to-left override'],
  ['bob\u2066', 'left-to-right isolate'],
  ['b\u200eob', 'left-to-right mark'],
  ['bob\u0000', 'NUL'],
  ['bob\nadmin', 'newline'],
  ['bob\u2028admin', 'line separator'],
  ['b\u043eb', 'Cyrillic o among Latin letters'],
  ['b\u03bfb', 'Greek omicron among Latin letters'],
  ['   ', 'whitespace only'],
  ['\u3000', 'ideographic space only'],
  [' bob', 'leading space'],
  ['bob\t', 'tab'],
  ['\ud800bob', 'lone surrogate'],
];

describe('agent names at registration', () => {
  for (const [name, what] of REFUSED_NAMES) {
    it(`refuses ${what} (${JSON.stringify(name)}) with -32602 saying what a name is, and writes nothing`, async () => {
      h = harness();
      await register(h.broker, 'bob', 'c');
      const e = await expectRefusedUnchanged(h, () => h!.broker.register({ name, contextId: 'c' }), {
        code: INVALID_PARAMS,
      });
      const issues = (e.details as { issues: { path: unknown[]; message: string }[] }).issues;
      expect(issues[0]?.path).toEqual(['name']);
      expect(issues[0]?.message).toContain(AGENT_NAME_RULE);
    });
  }

  it('normalizes to NFKC: full-width ｂｏｂ registers as bob, and is a duplicate of a live bob', async () => {
    h = harness();
    const wide = await h.broker.register({ name: 'ｂｏｂ', contextId: 'other' });
    expect(wide.card.name).toBe('bob');
    await register(h.broker, 'bob', 'c');
    await expectRefusedUnchanged(h, () => h!.broker.register({ name: 'ｂｏｂ', contextId: 'c' }), {
      code: INVALID_PARAMS,
    });
  });

  it('refuses Bob beside a live bob in one context, accepts it in another and after bob deregisters', async () => {
    h = harness();
    const bob = await register(h.broker, 'bob', 'c');
    const e = await expectRefusedUnchanged(h, () => h!.broker.register({ name: 'Bob', contextId: 'c' }), {
      code: INVALID_PARAMS,
    });
    expect(e.message).toContain('already live');
    await expect(h.broker.register({ name: 'BOB', contextId: 'elsewhere' })).resolves.toBeTruthy();
    await h.broker.deregister({ token: bob.token });
    const big = await h.broker.register({ name: 'Bob', contextId: 'c' });
    expect(big.card.name).toBe('Bob');
  });

  it('accepts names of one script, with spaces inside and digits or punctuation', async () => {
    h = harness();
    for (const name of ['Алиса', 'Ωμέγα', 'research agent 2', '研究者', 'données-α'.replace('α', 'a'), 'o\u0301']) {
      const r = await h.broker.register({ name, contextId: 'c' });
      expect(r.card.name).toBe(name.normalize('NFKC'));
    }
  });

  it('addresses by the folded name: to "BOB" and to full-width "ｂｏｂ" reach bob', async () => {
    h = harness();
    const bob = await register(h.broker, 'bob', 'c');
    const alice = await register(h.broker, 'alice', 'c');
    const one = await h.broker.send({ token: alice.token, to: 'BOB', message: text('hi') });
    const two = await h.broker.send({ token: alice.token, to: 'ｂｏｂ', message: text('again') });
    expect(one.task.agentName).toBe('bob');
    expect(two.task.agentName).toBe('bob');
    await settle();
    expect(bob.received.length).toBeGreaterThanOrEqual(2);
  });

  it('refuses skill names and context ids with invisible characters; skill names are normalized', async () => {
    h = harness();
    for (const params of [
      { name: 'a', contextId: 'c\u200b' },
      { name: 'a', contextId: ' ' },
      { name: 'a', contextId: 'c', skills: [{ id: 's', name: 'search\u202e' }] },
      { name: 'a', contextId: 'c', skills: [{ id: 's\u0000', name: 'search' }] },
    ]) {
      await expectRefusedUnchanged(h, () => h!.broker.register(params), { code: INVALID_PARAMS });
    }
    const r = await h.broker.register({ name: 'a', contextId: 'c', skills: [{ id: 's', name: 'ｓｅａｒｃｈ' }] });
    expect(r.card.skills[0]?.name).toBe('search');
  });

  it('folds NFKC then lower case', () => {
    expect(foldAgentName('ＢＯＢ')).toBe('bob');
    expect(foldAgentName('Bob')).toBe(foldAgentName('bOB'));
    expect(foldAgentName('ﬁle')).toBe('file');
  });
});

describe('look-alike names: one name by UTS #39 skeleton', () => {
  for (const [name, what] of LEAD_LOOK_ALIKES) {
    it(`refuses ${what} (${JSON.stringify(name)}) beside a live lead, naming lead when it is a look-alike`, async () => {
      h = harness();
      const lead = await register(h.broker, 'lead', 'c');
      const e = await expectRefusedUnchanged(h, () => h!.broker.register({ name, contextId: 'c' }), {
        code: INVALID_PARAMS,
      });
      const details = e.details as { issues: { path: unknown[]; message: string }[]; existing?: unknown };
      expect(details.issues[0]?.path).toEqual(['name']);
      if (details.existing === undefined) {
        // Invisible code points are refused by what a name is, live `lead` or not.
        expect(details.issues[0]?.message).toContain(AGENT_NAME_RULE);
        expect(details.issues[0]?.message).toMatch(
          /invisible or control character U\+(034F|FE0F|180B|17B4|115F|1160|2800)/,
        );
      } else {
        expect(details.existing).toEqual({ agentId: lead.agentId, name: 'lead' });
        expect(e.message).toContain('"lead"');
        expect(e.message).toContain('UTS #39 skeletons are equal');
      }
    });
  }

  it('accepts every look-alike of lead in another context, and in its own once lead deregisters', async () => {
    h = harness();
    const lead = await register(h.broker, 'lead', 'c');
    const visible = LEAD_LOOK_ALIKES.slice(0, 7).map(([name]) => name);
    expect(visible).toHaveLength(7);
    for (const [i, name] of visible.entries()) {
      await expect(h.broker.register({ name, contextId: `other-${i}` })).resolves.toBeTruthy();
    }
    await h.broker.deregister({ token: lead.token });
    const iead = await h.broker.register({ name: 'Iead', contextId: 'c' });
    expect(iead.card.name).toBe('Iead');
    // Now lead itself is the look-alike of the live Iead.
    const e = await expectRefusedUnchanged(h, () => h!.broker.register({ name: 'lead', contextId: 'c' }), {
      code: INVALID_PARAMS,
    });
    expect((e.details as { existing?: unknown }).existing).toEqual({ agentId: iead.agentId, name: 'Iead' });
  });

  it('keeps distinct names distinct: coderi beside coderl, worker1 beside worker2, rn refused beside m', async () => {
    h = harness();
    for (const name of ['coderl', 'coderi', 'worker1', 'worker2', 'agent-a', 'agent_a', 'm', 'Bop', 'Ωμέγα']) {
      await expect(h.broker.register({ name, contextId: 'c' }), name).resolves.toBeTruthy();
    }
    // UTS #39: `1`, `I` and `l` are one prototype, as are `m` and `rn`.
    for (const name of ['coder1', 'coderI', 'rn', 'workerl', '\u0412\u043e\u0440' /* Cyrillic Вор */]) {
      await expectRefusedUnchanged(h, () => h!.broker.register({ name, contextId: 'c' }), { code: INVALID_PARAMS });
    }
  });

  it('builds skeletons as UTS #39 section 4 does, from the generated confusables table', () => {
    expect(CONFUSABLES_VERSION).toBe('17.0.0');
    expect(PROTOTYPE_COUNT).toBeGreaterThan(6565);
    // Case-sensitive, as the standard: I and 1 have the prototype l; 0 has O.
    expect(skeleton('Iead')).toBe('lead');
    expect(skeleton('1ead')).toBe('lead');
    expect(skeleton('\u13deead')).toBe('Lead');
    expect(skeleton('m')).toBe('rn');
    expect(skeleton('i')).toBe('i');
    // Default-ignorable code points are removed; NFD before and after.
    expect(skeleton('le\u034fad\ufe0f')).toBe('lead');
    expect(skeleton('\u00e9')).toBe('e\u0301');
    // The name key: NFKC, skeleton, lower case.
    for (const [name] of LEAD_LOOK_ALIKES.slice(0, 7)) expect(agentNameSkeleton(name), name).toBe('lead');
    expect(agentNameSkeleton('ＬＥＡＤ')).toBe('lead');
    expect(agentNameSkeleton('coderi')).not.toBe(agentNameSkeleton('coderl'));
  });
});

describe('names stored before the rule', () => {
  it('keep working as stored: the database opens, such a party regains its tasks, new look-alikes are refused', async () => {
    h = harness();
    const requester = await register(h.broker, 'r1', 'c');
    await register(h.broker, 'w1', 'c');
    const created = await h.broker.send({ token: requester.token, to: 'w1', message: text('job') });
    await h.broker.close();
    // As an older build could have written them: a name that folds with a valid one, and an invalid one.
    const db = new Database(h.path);
    const rename = (from: string, to: string) => {
      db.prepare('UPDATE a2a_agents SET name = ? WHERE name = ?').run(to, from);
      db.prepare('UPDATE a2a_tasks SET requester_name = ? WHERE requester_name = ?').run(to, from);
      db.prepare('UPDATE a2a_tasks SET agent_name = ? WHERE agent_name = ?').run(to, from);
      db.prepare('UPDATE a2a_events SET party_name = ? WHERE party_name = ?').run(to, from);
    };
    rename('r1', 'Bob');
    rename('w1', 'bob\u200b');
    db.close();
    h.open();
    // The stored party regains its task under its stored name.
    const again = await h.broker.register({ name: 'Bob', contextId: 'c' });
    const listed = await h.broker.listTasks({ token: again.token, role: 'requester' });
    expect(listed.tasks.map((t) => [t.id, t.agentName])).toEqual([[created.task.id, 'bob\u200b']]);
    // A name that folds with it is refused while it is live; the invalid stored name cannot register again.
    await expectRefusedUnchanged(h, () => h!.broker.register({ name: 'bob', contextId: 'c' }), {
      code: INVALID_PARAMS,
    });
    await expectRefusedUnchanged(h, () => h!.broker.register({ name: 'bob\u200b', contextId: 'c' }), {
      code: INVALID_PARAMS,
    });
  });
});
