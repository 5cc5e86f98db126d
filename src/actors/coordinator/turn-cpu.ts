/**
 * The process's CPU time over the synchronous stretches of one decision
 * turn: the count pauses across each await, so what else the process runs
 * while the turn waits (its workers, its bus, other turns' callers) is not
 * counted as the turn's. For `observeCommits` only.
 */
export class TurnCpu {
  #us = 0;
  #mark: NodeJS.CpuUsage | undefined = process.cpuUsage();

  /** Stops counting (before an await). */
  pause(): void {
    if (this.#mark === undefined) return;
    const used = process.cpuUsage(this.#mark);
    this.#us += used.user + used.system;
    this.#mark = undefined;
  }

  /** Counts again (after the await). */
  resume(): void {
    this.#mark ??= process.cpuUsage();
  }

  /** Microseconds counted, up to now. */
  total(): number {
    this.pause();
    return this.#us;
  }
}
