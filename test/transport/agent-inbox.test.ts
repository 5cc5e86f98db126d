import { describe, expect, it } from 'vitest';
import type { DurableEvent } from '../../src/protocol/events.js';
import { AgentInbox } from '../../src/transport/agent-inbox.js';

function event(seq: number, taskId = 't1'): DurableEvent {
  return {
    seq,
    method: 'a2a.task.event',
    params: {
      recipient: 'agent',
      recipientName: 'a',
      contextId: 'c',
      seq,
      event: {
        kind: 'status-update',
        taskId,
        contextId: 'c',
        status: { state: 'working', timestamp: '2026-01-01T00:00:00.000Z' },
        final: false,
      },
    },
  };
}

/** The party's durable log, as `a2a.events.since` pages it. */
function log(events: DurableEvent[]) {
  const reads: number[] = [];
  const fetch = async (after: number, limit: number) => {
    reads.push(after);
    return events.filter((e) => e.seq > after).slice(0, limit);
  };
  return { fetch, reads };
}

const seqs = (events: DurableEvent[]) => events.map((e) => e.seq);

describe('AgentInbox', () => {
  it('delivers contiguous live events without reading the log', async () => {
    const source = log([]);
    const inbox = new AgentInbox(source.fetch);
    inbox.accept(event(1));
    inbox.accept(event(2));
    inbox.accept(event(2));
    expect(seqs(await inbox.wait(undefined, 0))).toEqual([1, 2]);
    expect(source.reads).toEqual([]);
  });

  it('a screened catch-up keeps what the screen keeps, counts the rest as received and never screens live events', async () => {
    // More than one page, so the screen sees every page and the paging goes on past a page it thinned.
    const all = Array.from({ length: 1500 }, (_, i) => event(i + 1, i % 2 === 0 ? 'ended' : 'open'));
    const source = log(all);
    const inbox = new AgentInbox(source.fetch);
    const screened: number[] = [];
    await inbox.catchUp(async (page) => {
      screened.push(page.length);
      return page.filter((e) => e.method === 'a2a.task.event' && e.params.event.taskId === 'open');
    });
    expect(screened).toEqual([1000, 500]);
    const kept = await inbox.wait(undefined, 0);
    expect(kept).toHaveLength(750);
    expect(kept.every((e) => e.seq % 2 === 0)).toBe(true);
    expect(inbox.lastSeq).toBe(1500);
    inbox.accept(event(1501, 'ended'));
    expect(seqs(await inbox.wait(undefined, 0))).toEqual([1501]);
    expect(source.reads).toEqual([0, 1000]);
  });

  it('fills a gap from the log before delivering what came live, each event once and in order', async () => {
    const all = [1, 2, 3, 4, 5].map((s) => event(s));
    const source = log(all);
    const inbox = new AgentInbox(source.fetch);
    inbox.accept(event(1));
    inbox.accept(event(4));
    inbox.accept(event(5));
    await inbox.catchUp();
    expect(seqs(await inbox.wait(undefined, 0))).toEqual([1, 2, 3, 4, 5]);
    expect(source.reads).toEqual([1]);
    expect(inbox.lastSeq).toBe(5);
  });

  it('resolves a wait with the events of its task only, and [] at the timeout', async () => {
    const inbox = new AgentInbox(log([]).fetch);
    const forB = inbox.wait('b', 5000);
    inbox.accept(event(1, 'a'));
    inbox.accept(event(2, 'b'));
    expect(seqs(await forB)).toEqual([2]);
    expect(seqs(await inbox.wait(undefined, 0))).toEqual([1]);
    const started = Date.now();
    expect(await inbox.wait(undefined, 50)).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('keeps its place when the log cannot be read, and resumes from there', async () => {
    let failing = true;
    const all = [1, 2, 3].map((s) => event(s));
    const inbox = new AgentInbox(async (after) => {
      if (failing) throw new Error('connection closed');
      return all.filter((e) => e.seq > after);
    });
    inbox.accept(event(1));
    inbox.accept(event(3));
    await inbox.catchUp();
    expect(inbox.lastSeq).toBe(1);
    failing = false;
    await inbox.catchUp();
    expect(seqs(await inbox.wait(undefined, 0))).toEqual([1, 2, 3]);
  });

  it('replays from a given seq (a runtime that kept its place)', async () => {
    const all = [1, 2, 3, 4].map((s) => event(s));
    const inbox = new AgentInbox(log(all).fetch, 2);
    await inbox.catchUp();
    expect(seqs(await inbox.wait(undefined, 0))).toEqual([3, 4]);
  });

  it('resolves pending waits when it closes', async () => {
    const inbox = new AgentInbox(log([]).fetch);
    const pending = inbox.wait(undefined, 60_000);
    inbox.close();
    expect(await pending).toEqual([]);
  });
});

describe('AgentInbox: a log cut by task retention', () => {
  it('refuses the next wait with A2A_EVENTS_PRUNED once, then reads on from the oldest cursor kept', async () => {
    const { eventsPruned } = await import('../../src/actors/broker/reads.js');
    const kept = [event(41), event(42)];
    const reads: number[] = [];
    const fetch = async (after: number, limit: number) => {
      reads.push(after);
      if (after < 40) throw eventsPruned(after, 40);
      return kept.filter((e) => e.seq > after).slice(0, limit);
    };
    const inbox = new AgentInbox(fetch, 3);
    await inbox.catchUp();
    expect(reads).toEqual([3, 40]);
    const refused = await inbox.wait(undefined, 0).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toMatchObject({ code: 'A2A_EVENTS_PRUNED', details: { after: 3, oldestCursor: 40 } });
    expect(seqs(await inbox.wait(undefined, 0))).toEqual([41, 42]);
    expect(inbox.lastSeq).toBe(42);
  });

  it('refuses a wait already pending when the cut is found', async () => {
    const { eventsPruned } = await import('../../src/actors/broker/reads.js');
    const fetch = async (after: number) => {
      if (after < 7) throw eventsPruned(after, 7);
      return [];
    };
    const inbox = new AgentInbox(fetch, 0);
    const pending = inbox.wait(undefined, 5000);
    await inbox.catchUp();
    await expect(pending).rejects.toMatchObject({ code: 'A2A_EVENTS_PRUNED' });
    expect(await inbox.wait(undefined, 0)).toEqual([]);
    expect(inbox.lastSeq).toBe(7);
  });
});
