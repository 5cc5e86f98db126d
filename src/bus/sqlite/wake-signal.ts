interface Waiter {
  wake: () => void;
}

/**
 * In-process wake-ups per role: a consumer waiting for work parks here and is
 * woken as soon as a publish to its role commits in this process (one waiter
 * per message published), or when its poll interval runs out (work published
 * by another process is found by that poll).
 */
export class WakeSignal {
  private readonly waiters = new Map<string, Set<Waiter>>();

  /** Resolves after `timeoutMs`, on a wake-up for `role`, or when `signal` aborts. */
  wait(role: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) {
        resolve();
        return;
      }
      let set = this.waiters.get(role);
      if (set === undefined) {
        set = new Set();
        this.waiters.set(role, set);
      }
      const roleSet = set;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        roleSet.delete(waiter);
        if (roleSet.size === 0 && this.waiters.get(role) === roleSet) this.waiters.delete(role);
        resolve();
      };
      const waiter: Waiter = { wake: done };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      signal?.addEventListener('abort', done, { once: true });
      roleSet.add(waiter);
    });
  }

  /** Wakes up to `count` waiters of `role` (oldest first). */
  notify(role: string, count = 1): void {
    const set = this.waiters.get(role);
    if (set === undefined) return;
    let left = count;
    for (const waiter of [...set]) {
      if (left-- <= 0) break;
      waiter.wake();
    }
  }

  /** Wakes every waiter (on close). */
  notifyAll(): void {
    for (const set of [...this.waiters.values()]) {
      for (const waiter of [...set]) waiter.wake();
    }
  }
}
