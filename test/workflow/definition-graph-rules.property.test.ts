import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { checkWorkflowDefinition } from '../../src/workflow/definition.js';

/**
 * The checks of a definition's graph, stated as rules over any graph of
 * role stages, against a reference that knows nothing of how they are
 * computed (reachability by transitive closure, not a search; loops by
 * mutual reachability, not Tarjan's algorithm):
 * - the start must be a stage; every `goto` must name one;
 * - every stage is reachable from the start by `goto` rules;
 * - a loop of stages without `maxVisits`, over rules without
 *   `maxTraversals`, is refused once per group of stages that reach each
 *   other, at the group's first stage, with a cycle that really is one;
 * - a rule behind an earlier one that always matches first and can never be
 *   used up is refused, once.
 */

const NAMES = ['s0', 's1', 's2', 's3', 's4', 's5'];
const GRAPH_CODES = new Set([
  'MISSING_START',
  'UNKNOWN_TARGET',
  'UNREACHABLE_STAGE',
  'UNBOUNDED_CYCLE',
  'UNREACHABLE_RULE',
]);

interface RuleSpec {
  on: 'succeeded' | 'failed';
  errorType?: string;
  goto?: string;
  end?: 'completed' | 'failed';
  maxTraversals?: number;
}
interface StageSpec {
  role: string;
  maxVisits?: number;
  next: RuleSpec[];
}

const ruleArb = (names: string[]): fc.Arbitrary<RuleSpec> =>
  fc
    .record({
      on: fc.constantFrom('succeeded' as const, 'failed' as const),
      errorType: fc.option(fc.constantFrom('E1', 'E2'), { nil: undefined }),
      target: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(...names) },
        { weight: 1, arbitrary: fc.constant('nowhere') },
        { weight: 2, arbitrary: fc.constantFrom('end:completed', 'end:failed') },
      ),
      maxTraversals: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined, freq: 3 }),
    })
    .map(({ on, errorType, target, maxTraversals }) => {
      const rule: RuleSpec = { on };
      if (on === 'failed' && errorType !== undefined) rule.errorType = errorType;
      if (target.startsWith('end:')) rule.end = target.slice(4) as 'completed' | 'failed';
      else {
        rule.goto = target;
        if (maxTraversals !== undefined) rule.maxTraversals = maxTraversals;
      }
      return rule;
    });

const graphArb = fc.integer({ min: 1, max: NAMES.length }).chain((k) => {
  const names = NAMES.slice(0, k);
  return fc.record({
    start: fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.constant('gone') }),
    stages: fc.tuple(
      ...names.map(() =>
        fc.record({
          maxVisits: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined, freq: 3 }),
          next: fc.array(ruleArb(names), { maxLength: 3 }),
        }),
      ),
    ),
  });
});

function definitionOf(g: { start: string; stages: { maxVisits?: number; next: RuleSpec[] }[] }) {
  const stages: Record<string, StageSpec> = {};
  g.stages.forEach((s, i) => {
    const stage: StageSpec = { role: 'worker', next: s.next };
    if (s.maxVisits !== undefined) stage.maxVisits = s.maxVisits;
    stages[NAMES[i]!] = stage;
  });
  return { id: 'graph', version: 1, start: g.start, stages };
}

/** `reach[a]` holds every stage reachable from `a` by one or more edges (transitive closure, Floyd-Warshall). */
function closure(names: string[], edge: (a: string, b: string) => boolean): Map<string, Set<string>> {
  const reach = new Map(names.map((a) => [a, new Set(names.filter((b) => edge(a, b)))]));
  for (const k of names) {
    for (const a of names) {
      if (!reach.get(a)!.has(k)) continue;
      for (const b of reach.get(k)!) reach.get(a)!.add(b);
    }
  }
  return reach;
}

const key = (p: { code: string; path: readonly (string | number)[] }) => `${p.code} ${JSON.stringify(p.path)}`;

describe('the checks of a definition graph, against a reference', () => {
  test.prop([graphArb], { numRuns: 600 })('report exactly what the rules say, once each', (g) => {
    const def = definitionOf(g);
    const names = Object.keys(def.stages);
    const has = (n: string) => names.includes(n);
    const expected: { code: string; path: (string | number)[] }[] = [];

    if (!has(def.start)) expected.push({ code: 'MISSING_START', path: ['start'] });
    for (const name of names) {
      def.stages[name]!.next.forEach((rule, index) => {
        if (rule.goto !== undefined && !has(rule.goto)) {
          expected.push({ code: 'UNKNOWN_TARGET', path: ['stages', name, 'next', index, 'goto'] });
        }
      });
    }

    // Reachability from the start over every goto to a stage.
    const gotoEdge = (a: string, b: string) => def.stages[a]!.next.some((r) => r.goto === b);
    const reach = closure(names, gotoEdge);
    if (has(def.start)) {
      for (const name of names) {
        if (name !== def.start && !reach.get(def.start)!.has(name)) {
          expected.push({ code: 'UNREACHABLE_STAGE', path: ['stages', name] });
        }
      }
    }

    // Unbounded loops: free stages (no maxVisits) over free rules (no maxTraversals).
    const free = (n: string) => has(n) && def.stages[n]!.maxVisits === undefined;
    const freeEdge = (a: string, b: string) =>
      free(a) && free(b) && def.stages[a]!.next.some((r) => r.goto === b && r.maxTraversals === undefined);
    const loops = closure(names, freeEdge);
    const onLoop = names.filter((n) => loops.get(n)!.has(n));
    const groups: string[][] = [];
    for (const n of onLoop) {
      const group = groups.find((gr) => loops.get(gr[0]!)!.has(n) && loops.get(n)!.has(gr[0]!));
      if (group === undefined) groups.push([n]);
      else group.push(n);
    }
    for (const group of groups) expected.push({ code: 'UNBOUNDED_CYCLE', path: ['stages', group[0]!] });

    // A rule behind an earlier one that always matches it first and cannot be used up.
    for (const name of names) {
      const next = def.stages[name]!.next;
      next.forEach((rule, index) => {
        const hidden = next.slice(0, index).some((first) => {
          const covers = first.on === rule.on && (first.errorType === undefined || first.errorType === rule.errorType);
          const exhaustible =
            first.goto !== undefined &&
            (first.maxTraversals !== undefined || (has(first.goto) && def.stages[first.goto]!.maxVisits !== undefined));
          return covers && !exhaustible;
        });
        if (hidden) expected.push({ code: 'UNREACHABLE_RULE', path: ['stages', name, 'next', index] });
      });
    }

    const check = checkWorkflowDefinition(def);
    const problems = check.ok ? [] : check.problems;
    // Role stages with these rules have no problem but the graph's.
    expect(problems.filter((p) => !GRAPH_CODES.has(p.code))).toEqual([]);
    expect(problems.map(key).sort()).toEqual(expected.map(key).sort());
    expect(check.ok).toBe(expected.length === 0);

    // Each loop reported is a loop: free stages of its group, joined by free rules, back to its first.
    for (const p of problems.filter((q) => q.code === 'UNBOUNDED_CYCLE')) {
      const cycle = /^stages (.*) form a loop/.exec(p.message)![1]!.split(' -> ');
      const group = groups.find((gr) => gr[0] === p.path[1])!;
      expect(cycle[0]).toBe(group[0]);
      expect(cycle.at(-1)).toBe(group[0]);
      expect(new Set(cycle.slice(0, -1)).size).toBe(cycle.length - 1);
      for (let i = 0; i + 1 < cycle.length; i++) {
        expect(group).toContain(cycle[i]);
        expect(freeEdge(cycle[i]!, cycle[i + 1]!)).toBe(true);
      }
      // And a shortest one: no loop through its first stage inside the group takes fewer rules.
      const start = group[0]!;
      let frontier = [start];
      const seen = new Set<string>();
      let shortest = 0;
      for (let steps = 1; shortest === 0 && frontier.length > 0; steps++) {
        const reached = frontier.flatMap((a) => group.filter((b) => freeEdge(a, b)));
        if (reached.includes(start)) shortest = steps;
        frontier = reached.filter((b) => !seen.has(b) && seen.add(b));
      }
      expect(cycle.length - 1).toBe(shortest);
    }
    // Each hidden rule names the earliest rule that hides it, and what it matches.
    for (const p of problems.filter((q) => q.code === 'UNREACHABLE_RULE')) {
      const [, name, , index] = p.path as [string, string, string, number];
      const rule = def.stages[name]!.next[index]!;
      const m = /^rule (\d+) is never used: rule (\d+) always matches "([^"]*)" first$/.exec(p.message)!;
      expect(Number(m[1])).toBe(index);
      expect(m[3]).toBe(rule.errorType === undefined ? rule.on : `${rule.on}/${rule.errorType}`);
      const earlier = Number(m[2]);
      expect(earlier).toBeLessThan(index);
      const first = def.stages[name]!.next[earlier]!;
      expect(first.on).toBe(rule.on);
    }
  });
});
