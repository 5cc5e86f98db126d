import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { silentLogger } from '../../src/log/logger.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { runCli } from './helpers.js';

/**
 * `switchboard items show` of a running item: what it waits for on the bus
 * (its hop, stage, role, how long it has been out) and, the file holding
 * the bus, where the hop's message is; `--json` has the same as `waiting`.
 * The real CLI, reading the file beside a running Coordinator.
 */
let cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

describe('switchboard items show: what a running item waits for', () => {
  it('prints the hop out, its role, its age and that it is queued; in JSON too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-items-waiting-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'switchboard.db');
    const coordinator = await createCoordinator({
      path,
      definitions: [
        parseWorkflowDefinition({
          id: 'waits',
          version: 1,
          start: 'review',
          stages: { review: { role: 'reviewer', next: [{ on: 'succeeded', end: 'completed' }] } },
        }),
      ],
      deployments: {},
      hopTimeoutMs: 0,
      logger: silentLogger(),
    });
    cleanups.push(() => coordinator.close());
    const id = await coordinator.createWorkItem({ workflow: 'waits', input: 'look' });
    const deadline = Date.now() + 10_000;
    while ((await coordinator.bus.stats('reviewer')).depth !== 1) {
      if (Date.now() > deadline) throw new Error('the hop was not queued');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    const text = await runCli(['items', 'show', id, '--db', path]);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^ {2}waiting: {4}hop 1 \(stage review, attempt 1\) on role reviewer, out \d+(\.\d)? m?s since \d{4}-\S+Z; queued, not taken yet$/m,
    );

    const json = JSON.parse((await runCli(['items', 'show', id, '--db', path, '--json'])).stdout);
    expect(json.waiting).toEqual([
      expect.objectContaining({
        itemId: id,
        itemState: 'running',
        kind: 'stage',
        hop: 1,
        stage: 'review',
        role: 'reviewer',
        timeouts: 0,
        bus: 'queued',
      }),
    ]);
    expect(json.waiting[0].ageMs).toBeGreaterThanOrEqual(0);
  });
});
