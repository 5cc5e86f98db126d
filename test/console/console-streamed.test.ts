import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { createModelAgent } from '../../src/agents/model-agent.js';
import { ConsoleData } from '../../src/console/console-data.js';
import { silentLogger } from '../../src/log/logger.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { streamingModel } from '../agents/scripted-model.js';
import { deployments } from '../coordinator/helpers.js';

/**
 * The console's `streamed` field: what a running item's hops stream to its
 * A2A task (a model agent's answer as the model writes it), read from the
 * file opened read-only beside the running Coordinator: a prefix of the
 * answer while the model writes, the whole answer once it is done.
 */
const definition = parseWorkflowDefinition({
  id: 'answer-once',
  version: 1,
  start: 'answer',
  stages: { answer: { role: 'writer', next: [{ on: 'succeeded', end: 'completed' }] } },
});
const PIECES = ['The health ', 'endpoint answers ', '200 with ', 'the build ', 'version.'];
const ANSWER = PIECES.join('');

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

describe('the console: an answer streamed while the item runs', () => {
  it('shows a prefix of the answer while the model writes, and the answer whole at the end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-console-streamed-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'switchboard.db');
    const agent = createModelAgent({ model: streamingModel(PIECES, 250), ask: false });
    const coordinator: Coordinator = await createCoordinator({
      path,
      definitions: [definition],
      deployments: deployments({ writer: agent }),
      logger: silentLogger(),
    });
    cleanups.push(() => coordinator.close());
    const file = openDatabase(path, { readonly: true });
    cleanups.push(() => {
      file.close();
    });
    const data = new ConsoleData({ kind: 'sqlite', db: file });
    const id = await coordinator.createWorkItem({ workflow: 'answer-once', input: 'Add a health endpoint' });

    const textOf = async () => {
      const detail = await data.item(id);
      const part = detail?.streamed[0]?.parts[0];
      return { state: detail?.item.state, text: part?.kind === 'text' ? part.text : '' };
    };
    // While the item runs, the console reads a growing prefix of the answer.
    const prefixes = new Set<string>();
    const deadline = Date.now() + 20_000;
    for (;;) {
      const seen = await textOf();
      if (seen.state === 'running' && seen.text.length > 0 && seen.text.length < ANSWER.length) prefixes.add(seen.text);
      if (seen.state === 'completed' || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(prefixes.size).toBeGreaterThan(0);
    for (const prefix of prefixes) expect(ANSWER.startsWith(prefix)).toBe(true);

    await coordinator.settled(id);
    await coordinator.mirrored();
    const done = await data.item(id);
    expect(done?.item.state).toBe('completed');
    expect(done?.streamed).toHaveLength(1);
    expect(done?.streamed[0]?.parts).toEqual([{ kind: 'text', text: ANSWER }]);
    expect(done?.streamed[0]?.name).toMatch(/^answer of /);
  }, 60_000);
});
