import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDemo } from '../../src/demo/run-demo.js';
import { createStatelyInspection } from '../../src/inspect/stately-inspection.js';

describe('the inspector on the Coordinator', () => {
  it('sees the broker, every workflow run and every pool of a demo run, and no payload', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-inspect-demo-'));
    try {
      const frames: string[] = [];
      const inspection = createStatelyInspection({ broadcast: (frame) => frames.push(frame) });
      const summary = await runDemo({ path: join(dir, 'demo.db'), approval: 'approve', inspect: inspection.inspect });
      // The library converts on timers: let them run.
      await new Promise((resolve) => setTimeout(resolve, 100));
      inspection.stop();
      expect(summary.asExpected).toBe(true);

      const events = frames.map((f) => JSON.parse(f) as { type: string; name?: string; sessionId: string });
      const actors = events.filter((e) => e.type === '@xstate.actor').map((e) => e.name ?? '');
      expect(actors).toContain('broker');
      const runs = actors.filter((name) => name.startsWith('workflow-run '));
      expect(new Set(runs).size).toBe(summary.items.length);
      for (const item of summary.items) expect(runs).toContain(`workflow-run ${item.id}`);
      expect(actors.filter((name) => name.startsWith('pool '))).toEqual(
        expect.arrayContaining(['pool architect', 'pool coding', 'pool testing', 'pool devops']),
      );
      expect(actors.some((name) => name.startsWith('task '))).toBe(true);
      // Runs move: their events reach the inspector.
      const runSessions = new Set(events.filter((e) => e.name?.startsWith('workflow-run ')).map((e) => e.sessionId));
      const runEvents = events.filter((e) => e.type === '@xstate.event' && runSessions.has(e.sessionId));
      expect(runEvents.length).toBeGreaterThan(summary.items.length * 3);
      // Payload bodies never: every text part is a size.
      expect(frames.join('\n')).not.toMatch(/"text":"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
