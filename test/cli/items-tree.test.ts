import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../coordinator/helpers.js';
import { runNode } from '../node-run.js';

/** `items list --tree` and `items show` over a work item with children (the review-fanout demo's file). */

const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;
let dir: string;
let db: string;

beforeAll(async () => {
  dir = tempDir();
  db = join(dir, 'demo.db');
  const demo = await runNode([bin, 'demo', '--workflow', 'review-fanout', '--json', '--approve', '--db', db]);
  expect(demo.code, demo.stderr).toBe(0);
}, 90_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface ListedItem {
  id: string;
  parentId: string | null;
  depth: number;
  usage: { inputTokens: number };
}

describe('items and their children', () => {
  it('list --tree puts each child under its parent, with its parent and depth in JSON', async () => {
    const listed = await runNode([bin, 'items', 'list', '--db', db, '--tree', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const { items } = JSON.parse(listed.stdout) as { items: ListedItem[] };
    expect(items).toHaveLength(16);
    const roots = items.filter((i) => i.depth === 0);
    expect(roots).toHaveLength(2);
    for (const [index, item] of items.entries()) {
      if (item.depth === 0) {
        expect(item.parentId).toBeNull();
        continue;
      }
      // A child follows its parent (or a sibling of the same parent).
      const parentAt = items.findIndex((p) => p.id === item.parentId);
      expect(parentAt).toBeGreaterThanOrEqual(0);
      expect(parentAt).toBeLessThan(index);
      expect(items.slice(parentAt + 1, index).every((s) => s.parentId === item.parentId)).toBe(true);
    }
    const text = await runNode([bin, 'items', 'list', '--db', db, '--tree']);
    expect(text.stdout).toContain('└ 3:qa ');
  }, 60_000);

  it('show gives the children and the own usage beside the rollup', async () => {
    const listed = JSON.parse((await runNode([bin, 'items', 'list', '--db', db, '--tree', '--json'])).stdout) as {
      items: ListedItem[];
    };
    const root = listed.items[0]!;
    const shown = await runNode([bin, 'items', 'show', root.id, '--db', db, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    const read = JSON.parse(shown.stdout) as {
      item: { usage: { inputTokens: number } };
      ownUsage: { inputTokens: number };
      ownHops: number;
      subtreeHops: number;
      children: { id: string; branch: string; usage: { inputTokens: number }; hops: number; subtreeHops: number }[];
    };
    expect(read.children.map((c) => c.branch).sort()).toEqual(
      ['2:0', '2:1', '2:2', '3:qa', '3:security', '5:qa', '5:security'].sort(),
    );
    const childTokens = read.children.reduce((s, c) => s + c.usage.inputTokens, 0);
    expect(read.item.usage.inputTokens).toBe(read.ownUsage.inputTokens + childTokens);
    // Hops roll up as usage does: the item's own and every child's (these children have none of their own).
    expect(read.ownHops).toBeGreaterThan(0);
    for (const c of read.children) expect(c.subtreeHops).toBe(c.hops);
    expect(read.subtreeHops).toBe(read.ownHops + read.children.reduce((s, c) => s + c.subtreeHops, 0));
    const text = await runNode([bin, 'items', 'show', root.id, '--db', db]);
    expect(text.stdout).toContain('Child work items (7');
    expect(text.stdout).toContain('own usage:');
    expect(text.stdout).toContain(`hops:       ${read.subtreeHops} (${read.ownHops} its own, the rest its children's)`);
    const refused = await runNode([bin, 'items', 'show', root.id, '--db', db, '--tree']);
    expect(refused.code).toBe(2);
  }, 60_000);

  it("usage --by item gives each item its own hops and its rollup, and names a child's parent", async () => {
    const usage = await runNode([bin, 'usage', '--db', db, '--by', 'item', '--json']);
    expect(usage.code, usage.stderr).toBe(0);
    const { groups } = JSON.parse(usage.stdout) as {
      groups: { key: string; inputTokens: number; parentId: string | null; rolledUp: { inputTokens: number } }[];
    };
    expect(groups).toHaveLength(16);
    for (const g of groups.filter((x) => x.parentId === null)) {
      const children = groups.filter((c) => c.parentId === g.key);
      expect(children).toHaveLength(7);
      expect(g.rolledUp.inputTokens).toBe(g.inputTokens + children.reduce((s, c) => s + c.rolledUp.inputTokens, 0));
    }
  }, 60_000);
});
