/**
 * Calls of one kind made in one turn of the event loop, sent together: the
 * Redis bus's `publish` and `ack` of many concurrent callers (the
 * Coordinator's outbox rows of one step, a worker's hops finishing together)
 * become one script call each turn instead of one per call. Each caller gets
 * its own answer, or the batch's error (a script call is all or nothing).
 * The turn's wait costs no round trip: node-redis itself writes a turn's
 * commands together at the end of the turn.
 */
export class TickBatch<In, Out> {
  readonly #send: (inputs: In[]) => Promise<readonly Out[]>;
  #pending: { input: In; resolve: (out: Out) => void; reject: (error: unknown) => void }[] = [];
  #scheduled = false;

  /** `send` answers each input in order (as many answers as inputs). */
  constructor(send: (inputs: In[]) => Promise<readonly Out[]>) {
    this.#send = send;
  }

  add(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.#pending.push({ input, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    this.#send(batch.map((p) => p.input)).then(
      (outs) => {
        for (const [i, p] of batch.entries()) p.resolve(outs[i]!);
      },
      (error: unknown) => {
        for (const p of batch) p.reject(error);
      },
    );
  }
}
