import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEMO_APPROVER } from '../../src/demo/run-demo.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { freePort, until } from './helpers.js';

describe('switchboard coordinator --inspect', () => {
  it('shows the broker and the pools of --local-workers, and stops its server on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-coordinator-inspect-'));
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [SWITCHBOARD_BIN, 'coordinator', '--db', join(dir, 'c.db'), '--local-workers', `--inspect=${port}`],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    let socket: WebSocket | undefined;
    try {
      await until(() => stderr.includes('coordinator ready'), `the coordinator to start; stderr: ${stderr}`);
      expect(stderr).toContain(`Stately inspector: open http://127.0.0.1:${port}/`);
      const frames: string[] = [];
      socket = new WebSocket(`ws://127.0.0.1:${port}`, { handshakeTimeout: 5000 });
      const opened = socket;
      socket.on('message', (data) => frames.push(data.toString()));
      await new Promise<void>((resolve, reject) => {
        opened.once('open', () => resolve());
        opened.once('error', reject);
      });
      const names = () =>
        frames
          .map((f) => JSON.parse(f) as { type: string; name?: string })
          .filter((e) => e.type === '@xstate.actor')
          .map((e) => e.name);
      await until(
        () =>
          ['broker', 'pool architect', 'pool coding', 'pool testing', 'pool devops'].every((n) => names().includes(n)),
        'the broker and the four pools',
      );
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      socket?.terminate();
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('switchboard coordinator logs', () => {
  it('logs each work item event with itemId, taskId, hop, stage and role, never the input text', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-coordinator-logs-'));
    const db = join(dir, 'c.db');
    const child = spawn(
      process.execPath,
      [
        SWITCHBOARD_BIN,
        'coordinator',
        '--db',
        db,
        '--local-workers',
        '--auto-approve',
        DEMO_APPROVER,
        '--log-level',
        'debug',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    try {
      await until(() => stderr.includes('coordinator ready'), 'the coordinator to start');
      const submit = spawn(
        process.execPath,
        [SWITCHBOARD_BIN, 'submit', '--db', db, '--workflow', 'dev-sdlc', '--input', 'the-secret-request-text'],
        { stdio: 'ignore' },
      );
      expect(await new Promise((resolve) => submit.once('close', resolve))).toBe(0);
      const lines = () =>
        stderr
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .filter((l) => l.msg === 'work item event');
      await until(() => lines().some((l) => l.event === 'completed'), 'the item to complete', 30_000);
      const events = lines();
      const created = events.find((l) => l.event === 'created');
      expect(created).toMatchObject({
        level: 30,
        itemId: expect.any(String),
        taskId: expect.any(String),
        state: expect.any(String),
      });
      const dispatched = events.find((l) => l.event === 'dispatched');
      expect(dispatched).toMatchObject({
        level: 20,
        itemId: created?.itemId,
        hop: expect.any(Number),
        stage: expect.any(String),
        role: expect.any(String),
      });
      expect(events.find((l) => l.event === 'completed')).toMatchObject({
        level: 30,
        itemId: created?.itemId,
        costUsd: expect.any(Number),
      });
      expect(stderr).not.toContain('the-secret-request-text');
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
