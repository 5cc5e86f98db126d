import type { CommitObserver, CoordinatorEngine } from './engine.js';

/**
 * The bench's and tests' window on the Coordinator's commits: not an option
 * of `createCoordinator` and not exported from the package. Each running
 * Coordinator registers its engine here; `observeCommits` sets the observer
 * called with every commit's timing (see `CommitObserver`).
 */
const engines = new WeakMap<object, CoordinatorEngine>();

export function registerCommitTiming(coordinator: object, engine: CoordinatorEngine): void {
  engines.set(coordinator, engine);
}

/** Calls `observer` with each commit's timing from now on; returns a function that stops it. */
export function observeCommits(coordinator: object, observer: CommitObserver): () => void {
  const engine = engines.get(coordinator);
  if (engine === undefined) throw new Error('not a Coordinator created by createCoordinator');
  engine.observer = observer;
  return () => {
    if (engine.observer === observer) engine.observer = undefined;
  };
}
