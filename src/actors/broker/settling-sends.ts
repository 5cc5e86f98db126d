import { MAX_LINE_BYTES } from '../../protocol/bounds.js';
import { type BrokerError, answerTooLarge } from '../../protocol/broker-error.js';
import { type Task, type TaskState, isTerminalState } from '../../protocol/task.js';
import type { A2AStore, TaskHead } from '../../persistence/a2a/store.js';
import type { CallScope } from './commit-queue.js';

/** The states a blocking send is answered in: its task ended, or waits for its requester. */
export function settlesSend(state: TaskState): boolean {
  return isTerminalState(state) || state === 'input-required' || state === 'auth-required';
}

interface Waiter {
  readonly historyLength: number | undefined;
  resolve(task: Task): void;
  reject(error: BrokerError): void;
}

/**
 * The blocking sends (`a2a.message.send` with `blocking: true`) waiting for
 * their task to settle. A send registers within its own call, so a refused
 * send leaves nothing waiting and a status committed in the same batch is
 * not missed; a status that settles the task builds each waiting send's
 * answer inside its call's transaction (the task as it commits, no read of
 * its own) and answers it once that call commits. A waiting send belongs to
 * no connection: one whose caller went away is answered to no one when its
 * task settles. The broker's close refuses the sends still waiting.
 */
export class SettlingSends {
  private readonly byTask = new Map<string, Set<Waiter>>();
  private readonly abortListeners = new WeakMap<AbortSignal, Set<() => void>>();

  constructor(private readonly store: A2AStore) {}

  /**
   * The task once it settles, as the send's `historyLength` asks; undone with
   * the send's call. `cancel` stops waiting (a send whose own answer failed).
   */
  wait(
    scope: CallScope,
    taskId: string,
    historyLength: number | undefined,
  ): { taskId: string; settled: Promise<Task>; cancel: () => void } {
    let waiter!: Waiter;
    const settled = new Promise<Task>((resolve, reject) => {
      waiter = { historyLength, resolve, reject };
    });
    // Its caller chains it once the send commits; a refusal before then is not unhandled.
    settled.catch(() => {});
    let waiters = this.byTask.get(taskId);
    if (waiters === undefined) {
      waiters = new Set();
      this.byTask.set(taskId, waiters);
    }
    waiters.add(waiter);
    const cancel = () => {
      this.remove(taskId, waiter);
    };
    scope.onUndo(cancel);
    return { taskId, settled, cancel };
  }

  /** Called with the head of every status a call commits: answers the task's waiting sends once it settles. */
  statusCommitted(scope: CallScope, head: TaskHead): void {
    if (this.byTask.size === 0 || !settlesSend(head.state)) return;
    const waiters = this.byTask.get(head.taskId);
    if (waiters === undefined) return;
    const answers = [...waiters].map(
      (waiter) => [waiter, this.store.taskWithin(head, waiter.historyLength, MAX_LINE_BYTES)] as const,
    );
    scope.afterCommit(() => {
      for (const [waiter, task] of answers) {
        // Answered already, by a status committed before this one.
        if (!this.remove(head.taskId, waiter)) continue;
        if (typeof task === 'number') waiter.reject(answerTooLarge(task));
        else waiter.resolve(task);
      }
    });
  }

  /** Refuses every waiting send with `error` (the broker closes). */
  refuseAll(error: BrokerError): void {
    const waiting = [...this.byTask.values()];
    this.byTask.clear();
    for (const waiters of waiting) for (const waiter of waiters) waiter.reject(error);
  }

  /**
   * Calls `listener` once `signal` aborts (at once if it has); the answer
   * stops listening. One listener per signal, however many sends wait on it
   * (a session's sends share its signal).
   */
  onAbort(signal: AbortSignal, listener: () => void): () => void {
    if (signal.aborted) {
      listener();
      return () => {};
    }
    let listeners = this.abortListeners.get(signal);
    if (listeners === undefined) {
      const set = new Set<() => void>();
      listeners = set;
      this.abortListeners.set(signal, set);
      signal.addEventListener(
        'abort',
        () => {
          this.abortListeners.delete(signal);
          for (const each of set) each();
        },
        { once: true },
      );
    }
    const own = listeners;
    own.add(listener);
    return () => {
      own.delete(listener);
    };
  }

  private remove(taskId: string, waiter: Waiter): boolean {
    const waiters = this.byTask.get(taskId);
    if (waiters === undefined || !waiters.delete(waiter)) return false;
    if (waiters.size === 0) this.byTask.delete(taskId);
    return true;
  }
}
