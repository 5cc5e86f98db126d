/**
 * A model-based property test of the whole broker: several agents in several
 * contexts issue random calls (valid and invalid: wrong token, stranger,
 * terminal task, illegal move, oversize payload), with restarts in the middle.
 * The reference model below is written from docs/protocol.md; after every step the
 * broker's answer, the events each live agent received, the durable logs and
 * the stored tasks must agree with it.
 */
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DurableEvent } from '../../src/protocol/events.js';
import type { TaskState } from '../../src/protocol/task.js';
import { SPEC_WORKER_STATUS, TERMINALS } from '../machines/task-spec.js';
import { type Agent, type Harness, harness, settle } from './helpers.js';

interface MParty {
  contextId: string;
  name: string;
  kind: 'subagent' | 'parent';
}

/** The universe: names repeat across contexts, two kinds. */
const PARTIES: readonly MParty[] = [
  { contextId: 'c1', name: 'a', kind: 'subagent' },
  { contextId: 'c1', name: 'b', kind: 'subagent' },
  { contextId: 'c2', name: 'a', kind: 'subagent' },
  { contextId: 'c2', name: 'd', kind: 'subagent' },
  { contextId: 'c1', name: 'p', kind: 'parent' },
  { contextId: 'c3', name: 'q', kind: 'parent' },
];
const N = PARTIES.length;

/** What an event is, as far as the model can say. */
interface MEvent {
  method: 'a2a.task.event' | 'a2a.push';
  taskId: string;
  kind: 'status-update' | 'artifact-update' | 'agent-update' | 'push';
  state: TaskState | null;
  final: boolean | null;
}

interface MTask {
  id: string;
  requester: number;
  worker: number;
  state: TaskState;
  history: string[];
  creationMessageId: string;
  artifacts: number;
  push: boolean;
}

interface Model {
  /** Per party: the live registration's start offset in its log, or null. */
  live: ({ startSeq: number } | null)[];
  tasks: MTask[];
  logs: MEvent[][];
  counter: number;
}

interface Real {
  h: Harness;
  agents: (Agent | null)[];
  /** A second, read-only connection to the broker's file. */
  reader: Database.Database;
  /** agentIds of ended registrations, per party. */
  lastAgentId: (string | null)[];
  stale: string[];
}

const BOGUS_TOKEN = Buffer.alloc(32, 1).toString('base64url');

function isTerminal(state: TaskState): boolean {
  return TERMINALS.includes(state);
}

function role(task: MTask, party: number): 'requester' | 'worker' | null {
  if (task.requester === party) return 'requester';
  if (task.worker === party) return 'worker';
  return null;
}

function emit(model: Model, party: number, event: MEvent): void {
  model.logs[party]?.push(event);
}

function statusEvent(task: MTask): MEvent {
  return {
    method: 'a2a.task.event',
    taskId: task.id,
    kind: 'status-update',
    state: task.state,
    final: isTerminal(task.state),
  };
}

function pushTo(model: Model, party: number, task: MTask): void {
  if (task.push)
    emit(model, party, { method: 'a2a.push', taskId: task.id, kind: 'push', state: task.state, final: null });
}

function toMEvent(e: DurableEvent): MEvent {
  if (e.method === 'a2a.push') {
    return { method: e.method, taskId: e.params.taskId, kind: 'push', state: e.params.status.state, final: null };
  }
  const ev = e.params.event;
  return ev.kind === 'status-update'
    ? { method: e.method, taskId: ev.taskId, kind: ev.kind, state: ev.status.state, final: ev.final }
    : { method: e.method, taskId: ev.taskId, kind: ev.kind, state: null, final: null };
}

/** The token a command uses for a party: its live token, else a stale or made-up one. */
function tokenOf(real: Real, party: number, pick: number): string {
  const agent = real.agents[party];
  if (agent) return agent.token;
  return real.stale.length > 0 && pick % 2 === 0 ? (real.stale[pick % real.stale.length] as string) : BOGUS_TOKEN;
}

/**
 * Awaits a call already queued and, when it is refused, checks that the
 * database did not change (SQLite's data_version, read through a second
 * connection before the queue flushes, moves on every commit of another
 * connection).
 */
async function outcome<T>(real: Real, call: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; code: string }> {
  const before = real.reader.pragma('data_version', { simple: true });
  try {
    return { ok: true, value: await call };
  } catch (e) {
    const err = e as { code?: string };
    // Calls here run one at a time: any change to the file would be a commit by the broker's connection.
    expect(real.reader.pragma('data_version', { simple: true }), 'a refused call changed the database').toBe(before);
    return { ok: false, code: String(err.code) };
  }
}

/** Checks everything observable against the model. */
async function verify(model: Model, real: Real): Promise<void> {
  await settle();
  for (let p = 0; p < N; p++) {
    const live = model.live[p];
    const agent = real.agents[p];
    expect(Boolean(live), `party ${p} live`).toBe(Boolean(agent));
    if (!live || !agent) continue;
    const log = model.logs[p] ?? [];
    expect(agent.received.map((e) => e.seq)).toEqual(log.slice(live.startSeq).map((_, i) => live.startSeq + i + 1));
    expect(agent.received.map(toMEvent)).toEqual(log.slice(live.startSeq));
  }
  const db = real.reader;
  {
    const rows = db.prepare('SELECT task_id, state, history_count FROM a2a_tasks ORDER BY task_id').all() as {
      task_id: string;
      state: string;
      history_count: number;
    }[];
    const expected = [...model.tasks]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((t) => ({ task_id: t.id, state: t.state, history_count: t.history.length }));
    expect(rows).toEqual(expected);
    const actors = db.prepare('SELECT COUNT(*) AS n FROM a2a_task_actors').get() as { n: number };
    const live = model.tasks.filter((t) => !isTerminal(t.state)).length;
    // A task still submitted has the machine's initial snapshot, not written.
    expect(actors.n).toBe(model.tasks.filter((t) => !isTerminal(t.state) && t.state !== 'submitted').length);
    expect(real.h.broker.liveTaskCount()).toBe(live);
  }
}

type Cmd = fc.AsyncCommand<Model, Real>;

class Register implements Cmd {
  constructor(readonly party: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const p = PARTIES[this.party] as MParty;
    const r = await outcome(real, real.h.broker.register({ name: p.name, contextId: p.contextId, kind: p.kind }));
    if (model.live[this.party]) {
      expect(r).toEqual({ ok: false, code: 'INVALID_PARAMS' });
    } else {
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      const agent: Agent = {
        agentId: r.value.agentId,
        token: r.value.token,
        name: p.name,
        contextId: p.contextId,
        received: [],
      };
      real.h.broker.events(agent.agentId).subscribe((e) => agent.received.push(e));
      real.agents[this.party] = agent;
      model.live[this.party] = { startSeq: model.logs[this.party]?.length ?? 0 };
    }
    await verify(model, real);
  }
  toString = () => `register(${this.party})`;
}

class Deregister implements Cmd {
  constructor(
    readonly party: number,
    readonly pick: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const token = tokenOf(real, this.party, this.pick);
    const r = await outcome(real, real.h.broker.deregister({ token }));
    if (!model.live[this.party]) {
      expect(r).toEqual({ ok: false, code: 'A2A_UNKNOWN_TOKEN' });
    } else {
      expect(r).toEqual({ ok: true, value: { deregistered: true } });
      // The worker's open tasks fail, then the requester's are canceled, each in creation order.
      for (const t of model.tasks) {
        if (t.worker === this.party && !isTerminal(t.state)) {
          t.state = 'failed';
          emit(model, t.requester, statusEvent(t));
          pushTo(model, t.requester, t);
        }
      }
      for (const t of model.tasks) {
        if (t.requester === this.party && !isTerminal(t.state)) {
          t.state = 'canceled';
          emit(model, t.worker, statusEvent(t));
          pushTo(model, t.worker, t);
        }
      }
      model.live[this.party] = null;
      real.stale.push(token);
      real.lastAgentId[this.party] = real.agents[this.party]?.agentId ?? null;
      real.agents[this.party] = null;
    }
    await verify(model, real);
  }
  toString = () => `deregister(${this.party})`;
}

class Restart implements Cmd {
  constructor(readonly rejoin: number[]) {}
  check = () => true;
  async run(model: Model, real: Real) {
    await real.h.reopen();
    for (let p = 0; p < N; p++) {
      const agent = real.agents[p];
      if (agent) {
        real.stale.push(agent.token);
        real.lastAgentId[p] = agent.agentId;
      }
      real.agents[p] = null;
      model.live[p] = null;
    }
    await verify(model, real);
    // Some agents reconnect: a new registration under the same (contextId, name).
    for (const p of this.rejoin) await new Register(p).run(model, real);
  }
  toString = () => `restart(rejoin ${this.rejoin.join(',')})`;
}

/** `to` resolution as docs/protocol.md says it, over the addressable agents (live, same kind, not the caller). */
function resolve(model: Model, caller: number, target: number, byId: boolean): number | null {
  const me = PARTIES[caller] as MParty;
  const addressable = (p: number) => model.live[p] !== null && PARTIES[p]?.kind === me.kind && p !== caller;
  if (byId) return addressable(target) ? target : null;
  const name = PARTIES[target]?.name;
  const named = PARTIES.map((_, i) => i).filter((i) => addressable(i) && PARTIES[i]?.name === name);
  const local = named.find((i) => PARTIES[i]?.contextId === me.contextId);
  if (local !== undefined) return local;
  return named.length === 1 ? (named[0] as number) : null;
}

class Create implements Cmd {
  constructor(
    readonly from: number,
    readonly to: number,
    readonly byId: boolean,
    readonly retry: number | null,
    readonly pick: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const token = tokenOf(real, this.from, this.pick);
    const mine = model.tasks.filter((t) => t.requester === this.from);
    const retried = this.retry !== null && mine.length > 0 ? mine[this.retry % mine.length] : undefined;
    const messageId = retried ? retried.creationMessageId : `m${model.counter++}`;
    const target = real.agents[this.to];
    const to = this.byId
      ? (target?.agentId ?? real.lastAgentId[this.to] ?? 'ghost')
      : (PARTIES[this.to]?.name as string);
    const r = await outcome(
      real,
      real.h.broker.send({ token, to, message: { messageId, parts: [{ kind: 'text', text: 'hello' }] } }),
    );
    if (!model.live[this.from]) {
      expect(r).toEqual({ ok: false, code: 'A2A_UNKNOWN_TOKEN' });
    } else if (retried) {
      expect(r.ok && r.value.task.id).toBe(retried.id);
    } else {
      const worker = resolve(model, this.from, this.to, this.byId);
      if (worker === null) {
        expect(r).toEqual({ ok: false, code: 'A2A_UNKNOWN_AGENT' });
      } else {
        expect(r.ok).toBe(true);
        if (!r.ok) return;
        const wp = PARTIES[worker] as MParty;
        expect([r.value.task.agentContextId, r.value.task.agentName]).toEqual([wp.contextId, wp.name]);
        const task: MTask = {
          id: r.value.task.id,
          requester: this.from,
          worker,
          state: 'submitted',
          history: [messageId],
          creationMessageId: messageId,
          artifacts: 0,
          push: false,
        };
        model.tasks.push(task);
        emit(model, worker, statusEvent(task));
      }
    }
    await verify(model, real);
  }
  toString = () =>
    `create(${this.from} -> ${this.to}${this.byId ? ' by id' : ''}${this.retry !== null ? ' retry' : ''})`;
}

/** A command on an existing task: common token and party checks. */
abstract class OnTask implements Cmd {
  constructor(
    readonly from: number,
    readonly taskPick: number,
    readonly pick: number,
  ) {}
  check = (model: Readonly<Model>) => model.tasks.length > 0;
  abstract call(real: Real, token: string, task: MTask, model: Model): Promise<unknown>;
  /** The expected refusal code past the token and party checks, or null; applies the model on success. */
  abstract apply(model: Model, task: MTask, role: 'requester' | 'worker', value: unknown): string | null;
  abstract label: string;

  /** The calling party: `from` below N is a party; N.. picks the task's requester or worker. */
  protected caller = 0;

  async run(model: Model, real: Real) {
    const open = model.tasks.filter((t) => !isTerminal(t.state));
    const pool = this.pick % 3 !== 0 && open.length > 0 ? open : model.tasks;
    const task = pool[this.taskPick % pool.length] as MTask;
    this.caller = this.from < N ? this.from : (this.from - N) % 2 === 0 ? task.requester : task.worker;
    const token = tokenOf(real, this.caller, this.pick);
    const r = await outcome(real, this.call(real, token, task, model));
    const who = role(task, this.caller);
    if (!model.live[this.caller]) expect(r).toEqual({ ok: false, code: 'A2A_UNKNOWN_TOKEN' });
    else if (who === null) expect(r).toEqual({ ok: false, code: 'A2A_CROSS_CONTEXT_DENIED' });
    else {
      const refusal = this.expectRefusal(model, task, who);
      if (refusal !== null) expect(r).toEqual({ ok: false, code: refusal });
      else {
        expect(r.ok, JSON.stringify(r)).toBe(true);
        this.apply(model, task, who, r.ok ? r.value : undefined);
      }
    }
    await verify(model, real);
  }
  abstract expectRefusal(model: Model, task: MTask, role: 'requester' | 'worker'): string | null;
  toString = () => `${this.label}(${this.from}, task ${this.taskPick})`;
}

class FollowUp extends OnTask {
  label = 'followUp';
  private messageId = '';
  constructor(
    from: number,
    taskPick: number,
    pick: number,
    readonly retry: boolean,
  ) {
    super(from, taskPick, pick);
  }
  call(real: Real, token: string, task: MTask, model: Model) {
    this.messageId =
      this.retry && task.history.length > 0
        ? (task.history[this.pick % task.history.length] as string)
        : `m${model.counter++}`;
    return real.h.broker.send({
      token,
      taskId: task.id,
      message: { messageId: this.messageId, parts: [{ kind: 'text', text: 'f' }] },
    });
  }
  expectRefusal(_model: Model, task: MTask) {
    if (task.history.includes(this.messageId)) return null;
    return isTerminal(task.state) ? 'A2A_TASK_TERMINAL' : null;
  }
  apply(model: Model, task: MTask, who: 'requester' | 'worker', value: unknown) {
    if (task.history.includes(this.messageId)) {
      expect((value as { task: { history: unknown[] } }).task.history).toHaveLength(task.history.length);
      return null;
    }
    task.history.push(this.messageId);
    if (who === 'requester' && (task.state === 'input-required' || task.state === 'auth-required'))
      task.state = 'working';
    emit(model, who === 'requester' ? task.worker : task.requester, statusEvent(task));
    return null;
  }
}

class SetStatus extends OnTask {
  label = 'status';
  private messageId = '';
  constructor(
    from: number,
    taskPick: number,
    pick: number,
    readonly state: TaskState,
    readonly withMessage: boolean,
  ) {
    super(from, taskPick, pick);
  }
  call(real: Real, token: string, task: MTask, model: Model) {
    this.messageId = `m${model.counter++}`;
    const message = this.withMessage
      ? { messageId: this.messageId, parts: [{ kind: 'text' as const, text: 's' }] }
      : undefined;
    return real.h.broker.setStatus({ token, id: task.id, state: this.state, ...(message ? { message } : {}) });
  }
  expectRefusal(_model: Model, task: MTask, who: 'requester' | 'worker') {
    if (isTerminal(task.state)) return 'A2A_TASK_TERMINAL';
    if (who !== 'worker') return 'A2A_INVALID_TRANSITION';
    return SPEC_WORKER_STATUS[task.state]?.includes(this.state) ? null : 'A2A_INVALID_TRANSITION';
  }
  apply(model: Model, task: MTask) {
    if (this.withMessage) task.history.push(this.messageId);
    task.state = this.state;
    emit(model, task.requester, statusEvent(task));
    if (isTerminal(task.state)) pushTo(model, task.requester, task);
    return null;
  }
  override toString = () => `status(${this.from}, task ${this.taskPick}, ${this.state})`;
}

class AddArtifact extends OnTask {
  label = 'artifact';
  call(real: Real, token: string, task: MTask) {
    return real.h.broker.addArtifact({ token, id: task.id, artifact: { parts: [{ kind: 'text', text: 'art' }] } });
  }
  expectRefusal(_model: Model, task: MTask, who: 'requester' | 'worker') {
    if (isTerminal(task.state)) return 'A2A_TASK_TERMINAL';
    return who === 'worker' ? null : 'A2A_INVALID_TRANSITION';
  }
  apply(model: Model, task: MTask) {
    task.artifacts++;
    emit(model, task.requester, {
      method: 'a2a.task.event',
      taskId: task.id,
      kind: 'artifact-update',
      state: null,
      final: null,
    });
    return null;
  }
}

class Cancel extends OnTask {
  label = 'cancel';
  call(real: Real, token: string, task: MTask) {
    return real.h.broker.cancel({ token, id: task.id });
  }
  expectRefusal(_model: Model, task: MTask) {
    return isTerminal(task.state) ? 'A2A_TASK_TERMINAL' : null;
  }
  apply(model: Model, task: MTask, who: 'requester' | 'worker') {
    task.state = 'canceled';
    const other = who === 'requester' ? task.worker : task.requester;
    emit(model, other, statusEvent(task));
    pushTo(model, other, task);
    return null;
  }
}

class GetTask extends OnTask {
  label = 'get';
  call(real: Real, token: string, task: MTask) {
    return real.h.broker.getTask({ token, id: task.id });
  }
  expectRefusal() {
    return null;
  }
  apply(_model: Model, task: MTask, _who: 'requester' | 'worker', value: unknown) {
    const got = (
      value as { task: { status: { state: string }; history: { messageId: string }[]; artifacts: unknown[] } }
    ).task;
    expect(got.status.state).toBe(task.state);
    expect(got.history.map((m) => m.messageId)).toEqual(task.history);
    expect(got.artifacts).toHaveLength(task.artifacts);
    return null;
  }
}

class Resubscribe extends OnTask {
  label = 'resubscribe';
  call(real: Real, token: string, task: MTask) {
    return real.h.broker.resubscribe({ token, id: task.id });
  }
  expectRefusal() {
    return null;
  }
  apply(model: Model, task: MTask) {
    emit(model, this.caller, statusEvent(task));
    return null;
  }
}

class SetPush extends OnTask {
  label = 'setPush';
  call(real: Real, token: string, task: MTask) {
    return real.h.broker.setPushConfig({ token, id: task.id, config: { token: 'hook' } });
  }
  expectRefusal() {
    return null;
  }
  apply(_model: Model, task: MTask) {
    task.push = true;
    return null;
  }
}

class EventsSince implements Cmd {
  constructor(
    readonly party: number,
    readonly after: number,
    readonly pick: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const r = await outcome(
      real,
      real.h.broker.eventsSince({ token: tokenOf(real, this.party, this.pick), after: this.after, limit: 1000 }),
    );
    if (!model.live[this.party]) expect(r).toEqual({ ok: false, code: 'A2A_UNKNOWN_TOKEN' });
    else {
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      const log = model.logs[this.party] ?? [];
      expect(r.value.events.map((e) => e.seq)).toEqual(log.slice(this.after).map((_, i) => this.after + i + 1));
      expect(r.value.events.map(toMEvent)).toEqual(log.slice(this.after));
    }
    await verify(model, real);
  }
  toString = () => `eventsSince(${this.party}, ${this.after})`;
}

class Oversize implements Cmd {
  constructor(
    readonly from: number,
    readonly to: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const r = await outcome(
      real,
      real.h.broker.send({
        token: tokenOf(real, this.from, 0),
        to: PARTIES[this.to]?.name as string,
        message: { parts: [{ kind: 'text', text: 'x'.repeat(16_001) }] },
      }),
    );
    expect(r).toEqual({ ok: false, code: 'A2A_PAYLOAD_TOO_LARGE' });
    await verify(model, real);
  }
  toString = () => `oversize(${this.from})`;
}

const party = fc.integer({ min: 0, max: N - 1 });
const pick = fc.nat(1000);
/** A caller for a task command: a party, or (N..N+3) the task's requester or worker. */
const taskCaller = fc.integer({ min: 0, max: N + 3 });
const anyState = fc.constantFrom<TaskState>(
  'working',
  'input-required',
  'auth-required',
  'completed',
  'failed',
  'rejected',
  'submitted',
  'canceled',
);
const liveState = fc.constantFrom<TaskState>('working', 'input-required', 'auth-required');

/** Mostly, a creation targets another party of the caller's kind. */
function peerOf(from: number, k: number): number {
  const kind = PARTIES[from]?.kind;
  const peers = PARTIES.map((_, i) => i).filter((i) => i !== from && PARTIES[i]?.kind === kind);
  return peers[k % peers.length] as number;
}

/** `n` copies of an arbitrary: fc.commands picks among its list uniformly, so copies are weights. */
function times<T>(n: number, arb: fc.Arbitrary<T>): fc.Arbitrary<T>[] {
  return Array.from({ length: n }, () => arb);
}

const commands = [
  ...times(
    2,
    party.map((p) => new Register(p)),
  ),
  fc.tuple(party, pick).map(([p, k]) => new Deregister(p, k)),
  fc.subarray([0, 1, 2, 3, 4, 5]).map((rejoin) => new Restart(rejoin)),
  ...times(
    3,
    fc
      .tuple(party, party, fc.nat(3), fc.boolean(), fc.option(fc.nat(20), { freq: 5 }), pick)
      .map(([f, t, peer, byId, retry, k]) => new Create(f, peer === 0 ? t : peerOf(f, t), byId, retry, k)),
  ),
  ...times(
    3,
    fc.tuple(taskCaller, pick, pick, fc.boolean()).map(([f, t, k, retry]) => new FollowUp(f, t, k, retry)),
  ),
  fc.tuple(taskCaller, pick, pick, anyState, fc.boolean()).map(([f, t, k, s, m]) => new SetStatus(f, t, k, s, m)),
  ...times(
    3,
    fc.tuple(taskCaller, pick, pick, liveState, fc.boolean()).map(([f, t, k, s, m]) => new SetStatus(f, t, k, s, m)),
  ),
  fc.tuple(taskCaller, pick, pick).map(([f, t, k]) => new AddArtifact(f, t, k)),
  fc.tuple(taskCaller, pick, pick).map(([f, t, k]) => new Cancel(f, t, k)),
  fc.tuple(taskCaller, pick, pick).map(([f, t, k]) => new GetTask(f, t, k)),
  fc.tuple(taskCaller, pick, pick).map(([f, t, k]) => new Resubscribe(f, t, k)),
  fc.tuple(taskCaller, pick, pick).map(([f, t, k]) => new SetPush(f, t, k)),
  fc.tuple(party, fc.nat(6), pick).map(([p, a, k]) => new EventsSince(p, a, k)),
  fc.tuple(party, party).map(([f, t]) => new Oversize(f, t)),
];

/**
 * Run twice: as the broker runs by default (no inspector) and with an
 * inspector attached (every task and agent actor reports to it): both must
 * agree with the same model.
 */
describe.each([
  { mode: 'not inspected (default)', inspect: undefined, numRuns: 100 },
  { mode: 'inspected', inspect: { next: () => {} }, numRuns: 50 },
])('the broker against a reference model: $mode', ({ inspect, numRuns }) => {
  it('agrees on answers, events and stored tasks over random call sequences with restarts', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.subarray([0, 1, 2, 3, 4, 5], { minLength: 4 }),
        fc.commands(commands, { maxCommands: 80, size: 'large' }),
        async (first, cmds) => {
          const h = harness(inspect === undefined ? {} : { inspect });
          const model: Model = { live: PARTIES.map(() => null), tasks: [], logs: PARTIES.map(() => []), counter: 0 };
          const real: Real = {
            h,
            reader: new Database(h.path, { readonly: true }),
            agents: PARTIES.map(() => null),
            lastAgentId: PARTIES.map(() => null),
            stale: [],
          };
          try {
            // Most parties start registered, so that most runs reach deep states.
            await fc.asyncModelRun(() => ({ model, real }), [...first.map((p) => new Register(p)), ...cmds]);
          } finally {
            real.reader.close();
            await h.close();
          }
        },
      ),
      { numRuns },
    );
  });
});
