import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { SystemSnapshot } from '../../src/inspect/system-snapshot.js';
import { duration, renderScreen } from '../../src/inspect/top-screen.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';

const run = promisify(execFile);

function snapshot(liveTasks: number): SystemSnapshot {
  return {
    at: Date.parse('2026-01-02T03:04:05Z'),
    tasks: {
      total: liveTasks,
      byState: {
        submitted: liveTasks,
        working: 0,
        'input-required': 0,
        'auth-required': 0,
        completed: 0,
        canceled: 0,
        failed: 0,
        rejected: 0,
      },
      live: Array.from({ length: liveTasks }, (_, i) => ({
        taskId: `task-${i}`,
        state: 'submitted' as const,
        worker: 'w',
        requester: 'r',
        idleMs: 1500,
      })),
    },
    queues: [{ role: 'coding', depth: 3, delayed: 1, inFlight: 2, deadLetters: 4, done: 5, lagMs: 2500 }],
    items: null,
  };
}

describe('the top screen', () => {
  it('fits the terminal: sections keep their heads, long lists end with "+N more"', () => {
    const lines = renderScreen(snapshot(50), { db: 'x.db', width: 100, height: 20, intervalMs: 500, color: false });
    expect(lines).toHaveLength(20);
    expect(lines[0]).toContain('switchboard top  x.db  03:04:05 UTC  every 500 ms');
    expect(lines.some((l) => /^\s+\+\d+ more$/.test(l))).toBe(true);
    const queue = lines.find((l) => l.startsWith('coding'));
    expect(queue).toMatch(/^coding\s+3\s+1\s+2\s+4\s+5\s+2\.5s$/);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(100);
    // No section for what the file does not hold.
    expect(lines.join('\n')).not.toContain('WORK ITEMS');
  });

  it('shows everything without a height limit, and styles only with color on', () => {
    const plain = renderScreen(snapshot(50), { db: 'x.db', width: 120, height: null, intervalMs: 500, color: false });
    expect(plain.filter((l) => l.startsWith('task-'))).toHaveLength(50);
    expect(plain.join('')).not.toContain('\x1b[');
    const styled = renderScreen(snapshot(1), { db: 'x.db', width: 120, height: 30, intervalMs: 500, color: true });
    expect(styled.join('')).toContain('\x1b[7m');
  });

  it('formats durations', () => {
    expect([duration(850), duration(12_300), duration(245_000), duration(7_800_000)]).toEqual([
      '850ms',
      '12.3s',
      '4m05s',
      '2h10m',
    ]);
  });

  it("shows the Coordinator's work items with stage, hop and cost after a demo run", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-top-'));
    try {
      const db = join(dir, 'demo.db');
      await run(process.execPath, [SWITCHBOARD_BIN, 'demo', '--approve', '--db', db], { timeout: 60_000 });
      const { stdout } = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--db', db]);
      expect(stdout).toMatch(/WORK ITEMS 2 {2}cost \$\d+\.\d+ {2}tokens \d+\/\d+ {2}completed 2/);
      const items = stdout.split('\n').filter((l) => l.includes('dev-sdlc@1'));
      expect(items).toHaveLength(2);
      for (const item of items) expect(item).toMatch(/completed\s+devops\s+\d+\/\d+\s+\$\d+\.\d{4}\s+\d+\/\d+\s+-$/);
      expect(stdout).toMatch(/QUEUES \d+/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('follows the tree of a review-fanout run: children under their parent, each tree counted once in the cost', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-top-'));
    try {
      const db = join(dir, 'demo.db');
      await run(process.execPath, [SWITCHBOARD_BIN, 'demo', '--workflow', 'review-fanout', '--approve', '--db', db], {
        timeout: 90_000,
      });
      const { stdout } = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--db', db], {
        env: { ...process.env, COLUMNS: '160' },
      });
      const lines = stdout.split('\n');
      const isRoot = (l: string) => /^[0-9a-f-]{36}\s+review-fanou/.test(l);
      const roots = lines.flatMap((l, i) => (isRoot(l) ? [i] : []));
      expect(roots).toHaveLength(2);
      for (const at of roots) {
        // The children follow their root, indented, named by where they sit (hop:branch).
        const children: string[] = [];
        for (let i = at + 1; i < lines.length && /^└ /.test(lines[i]!); i++) children.push(lines[i]!);
        expect(children.map((l) => l.split(/\s+/)[1]).sort()).toEqual(
          ['2:0', '2:1', '2:2', '3:qa', '3:security', '5:qa', '5:security'].sort(),
        );
      }
      // The total is the sum of the roots' rollups: the children's cost is in it once.
      const cost = (l: string) => Number(/\$(\d+\.\d{4})/.exec(l)?.[1]);
      const total = Number(/WORK ITEMS 16 {2}cost \$(\d+\.\d+)/.exec(stdout)?.[1]);
      expect(total).toBeGreaterThan(0);
      expect(total).toBeCloseTo(
        roots.reduce((s, at) => s + cost(lines[at]!), 0),
        3,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});
