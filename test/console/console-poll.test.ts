import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleData } from '../../src/console/console-data.js';
import { startConsoleServer } from '../../src/console/console-server.js';
import { createLogger } from '../../src/log/logger.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';

/**
 * The console's live poll and its outage warning: one warning per outage,
 * and none for a read that was in flight as the console stopped and failed
 * as the store closed (the CLI closes the store right after `stop`).
 */
class GatedData extends ConsoleData {
  gate: Promise<void> | undefined;
  reads = 0;
  override async version(): Promise<string> {
    this.reads++;
    if (this.gate !== undefined) await this.gate;
    return super.version();
  }
}

function capturedLogger() {
  const lines: { msg: string }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ destination, level: 'debug' }), lines };
}

/** The store's own read (no gate): what the poll's read in flight met. */
const storeVersion = (data: GatedData) => ConsoleData.prototype.version.call(data);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.reverse()) cleanup();
  cleanups = [];
});

function openFile() {
  const dir = mkdtempSync(join(tmpdir(), 'sb-console-poll-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const db = openDatabase(join(dir, 'switchboard.db'));
  return db;
}

describe('the console live poll', () => {
  it('does not call a read in flight as it stops an outage, when the store closes under it', async () => {
    const db = openFile();
    const data = new GatedData({ kind: 'sqlite', db });
    const { logger, lines } = capturedLogger();
    const server = await startConsoleServer({ data, logger, port: 0, pollMs: 20 });
    let open!: () => void;
    data.gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const before = data.reads;
    while (data.reads === before) await sleep(5);
    // A poll's read is in flight; the console stops and its store closes (as the CLI does), then the read
    // goes on against the closed store and fails.
    await server.stop();
    db.close();
    open();
    await sleep(100);
    await expect(storeVersion(data)).rejects.toThrow(/not open/);
    expect(lines.map((line) => line.msg)).not.toContain('console could not read the database');
  });

  it('warns once per outage, says when it reads again, and warns again for a second outage', async () => {
    const db = openFile();
    const data = new GatedData({ kind: 'sqlite', db });
    const { logger, lines } = capturedLogger();
    const server = await startConsoleServer({ data, logger, port: 0, pollMs: 10 });
    cleanups.push(() => void server.stop());
    let failing = true;
    let failed = 0;
    const failingRead = async (): Promise<string> => {
      failed++;
      throw new Error('the store does not answer');
    };
    const original = data.version.bind(data);
    data.version = () => (failing ? failingRead() : original());
    const count = (msg: string) => lines.filter((line) => line.msg === msg).length;
    const waitFor = async (what: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!what() && Date.now() < deadline) await sleep(5);
      expect(what()).toBe(true);
    };
    for (let outage = 1; outage <= 2; outage++) {
      failing = true;
      const failedBefore = failed;
      await waitFor(() => count('console could not read the database') === outage);
      // Many polls fail during the outage; only its first is logged.
      await sleep(100);
      expect(count('console could not read the database')).toBe(outage);
      expect(failed - failedBefore).toBeGreaterThan(2);
      failing = false;
      await waitFor(() => count('console reads the database again') === outage);
    }
    await server.stop();
    expect(count('console could not read the database')).toBe(2);
  });
});
