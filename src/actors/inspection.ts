import type { StoreInspectionEvent } from '@xstate/store';
import type { InspectionEvent, Observer } from 'xstate';

/**
 * What a root actor reports to an inspector: XState's inspection events, and
 * the `@xstate.transition` events of an `@xstate/store` (the broker's
 * registry). Given to every root actor the runtime creates (`createActor(...,
 * { inspect })`): the broker's registry, each agent and each task actor, each
 * workflow run and each pool. Absent, nothing is inspected and nothing costs.
 */
export type ActorInspector = Observer<InspectionEvent | StoreInspectionEvent>;

/** The store events an inspector sees, re-labelled with a name (`broker`). */
export interface NamedStoreRef {
  readonly sessionId: string;
  readonly id: string;
  send(event: unknown): void;
  getSnapshot(): unknown;
}

interface InspectableStore {
  readonly sessionId: string;
  send(event: never): void;
  getSnapshot(): unknown;
  inspect(observer: Observer<StoreInspectionEvent>): { unsubscribe(): void };
}

/**
 * Subscribes `inspector` to a store's transitions under `name` (the store
 * itself has no id). Returns the unsubscription.
 */
export function inspectStore(store: InspectableStore, name: string, inspector: ActorInspector): () => void {
  const ref: NamedStoreRef = {
    sessionId: store.sessionId,
    id: name,
    send: (event) => store.send(event as never),
    getSnapshot: () => store.getSnapshot(),
  };
  const subscription = store.inspect({
    next: (event) => inspector.next?.({ ...event, actorRef: ref }),
  });
  return () => subscription.unsubscribe();
}
