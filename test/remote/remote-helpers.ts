import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { DurableEvent } from '../../src/protocol/events.js';
import type { Task, TaskState } from '../../src/protocol/task.js';
import type { SwitchboardClient } from '../../src/transport/client.js';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'switchboard.js');
const SDK_AGENT = join(import.meta.dirname, 'sdk-agent-server.mjs');

export interface SdkAgent {
  child: ChildProcess;
  port: number;
  url: string;
  stop: () => Promise<void>;
}

/** The official SDK's server as a child process on 127.0.0.1 (`port` 0 picks a free one). */
export function startSdkAgent(mode: 'stream' | 'poll', port = 0): Promise<SdkAgent> {
  const child = spawn(process.execPath, [SDK_AGENT, String(port), mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (t: string) => {
    stderr += t;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the SDK agent exited ${code}: ${stderr}`)));
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (t: string) => {
      out += t;
      const match = /\{"port":(\d+)\}/.exec(out);
      if (match) {
        const p = Number(match[1]);
        resolve({
          child,
          port: p,
          url: `http://127.0.0.1:${p}/`,
          stop: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
            await exited;
          },
        });
      }
    });
  });
}

/** Runs `switchboard agents ...` to its end. */
export function agentsCli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [BIN, 'agents', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Runs `switchboard agents ...` without blocking this process (a server of the test's own can answer it). */
export function agentsCliAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'agents', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (t: string) => {
    stdout += t;
  });
  child.stderr?.setEncoding('utf8').on('data', (t: string) => {
    stderr += t;
  });
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

export interface BridgeProcess {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/** A real `switchboard agents bridge` process; resolves once it has bridged its remotes. */
export function startBridge(db: string, extra: string[] = []): Promise<BridgeProcess> {
  const child = spawn(process.execPath, [BIN, 'agents', 'bridge', '--db', db, '--log-level', 'debug', ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (t: string) => {
    stderr += t;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the bridge exited ${code}: ${stderr.slice(-3000)}`)));
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (t: string) => {
      out += t;
      if (out.includes('switchboard agents bridge on')) {
        resolve({
          child,
          stderr: () => stderr,
          exited,
          stop: async (signal = 'SIGTERM') => {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            return exited;
          },
        });
      }
    });
  });
}

/** Waits until `probe` answers something other than undefined (checked every 50 ms, for up to `ms`). */
export async function until<T>(probe: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The agent names of the broker's registry, as `token`'s agent discovers them. */
export async function agentNames(client: SwitchboardClient, token: string): Promise<string[]> {
  try {
    return (await client.listAgents({ token })).agents.map((card) => card.name);
  } catch (error) {
    // Alone on the broker: nobody to list.
    if ((error as { code?: unknown }).code === 'A2A_NO_PEERS') return [];
    throw error;
  }
}

/**
 * The events a requester receives about one task until the task reaches one of
 * `states` (or ends): its status states and artifact ids, in order.
 */
export async function followTask(
  client: SwitchboardClient,
  token: string,
  taskId: string,
  states: readonly TaskState[] = ['completed', 'failed', 'canceled', 'rejected'],
  ms = 20_000,
): Promise<{ events: DurableEvent[]; steps: string[]; task: Task }> {
  const events: DurableEvent[] = [];
  const steps: string[] = [];
  const deadline = Date.now() + ms;
  for (;;) {
    const batch = await client.wait({ token, taskId, timeoutSeconds: 1 });
    for (const event of batch) {
      events.push(event);
      if (event.method !== 'a2a.task.event') continue;
      const e = event.params.event;
      if (e.kind === 'status-update') steps.push(e.status.state);
      if (e.kind === 'artifact-update') steps.push(`artifact:${e.artifact.artifactId}`);
    }
    const { task } = await client.getTask({ token, id: taskId });
    const last = steps.at(-1);
    if (last !== undefined && (states as readonly string[]).includes(last)) return { events, steps, task };
    if (Date.now() > deadline) throw new Error(`the task did not reach ${states.join('/')}: ${steps.join(', ')}`);
  }
}

/** The text of a message's or artifact's parts. */
export function textOf(parts: readonly { kind: string; text?: string }[] | undefined): string {
  return (parts ?? []).map((p) => (p.kind === 'text' ? p.text : '')).join('');
}
