import { type StatelyInspectionEvent, createInspector } from '@statelyai/inspect';
import type { AnyEventObject, InspectionEvent } from 'xstate';
import type { ActorInspector } from '../actors/inspection.js';
import { sanitizeForInspection } from './sanitize.js';

/** Where sanitized, serialized inspection events go (the inspector server). */
export interface InspectionSink {
  broadcast(frame: string): void;
}

/** The inspector handed to the runtime's root actors (`createBroker({ inspect })`, pools, runs). */
export interface StatelyInspection {
  /** Give this to every root actor. */
  readonly inspect: ActorInspector;
  /** Events sent to the sink so far. */
  readonly sent: number;
  /** Stops forwarding (events after this are dropped). */
  stop(): void;
}

interface StoreRef {
  sessionId: string;
  id?: unknown;
  send(event: unknown): void;
  getSnapshot(): unknown;
}

/**
 * Turns the XState inspection events of switchboard's actors into Stately
 * inspection events (`@statelyai/inspect`'s `createInspector`) and sends them
 * to `sink`, sanitized twice: the snapshot, context and event are copied
 * through `sanitizeForInspection` before the library reads them, and the
 * finished event again (its machine definition included) before it is
 * serialized. `@xstate/store` transitions
 * (the broker's registry) become an actor, its events and its snapshots.
 */
export function createStatelyInspection(sink: InspectionSink): StatelyInspection {
  let stopped = false;
  let sent = 0;
  const inspector = createInspector(
    {
      send(event: StatelyInspectionEvent) {
        if (stopped) return;
        // Runs on a timer (the library defers its conversion): it must never throw.
        let frame: string;
        try {
          frame = JSON.stringify(sanitizeForInspection(withSanitizedDefinition(event)));
        } catch {
          return;
        }
        sent++;
        sink.broadcast(frame);
      },
    },
    { autoStart: true },
  );
  const knownStores = new Set<string>();

  const onStoreTransition = (event: { actorRef: StoreRef; event: AnyEventObject; snapshot: unknown }) => {
    const ref = event.actorRef;
    const name = typeof ref.id === 'string' ? ref.id : ref.sessionId;
    const named = {
      sessionId: ref.sessionId,
      id: name,
      logic: { config: { id: name } },
      send: ref.send,
      getSnapshot: ref.getSnapshot,
    };
    const snapshot = sanitizeForInspection(event.snapshot) as { status?: 'active'; context?: unknown };
    const shown = { status: snapshot.status ?? 'active', context: snapshot.context } as const;
    if (!knownStores.has(ref.sessionId)) {
      knownStores.add(ref.sessionId);
      inspector.actor(named, shown);
    }
    if (event.event.type === '@xstate.init') return;
    const sanitizedEvent = sanitizeForInspection(event.event) as AnyEventObject;
    inspector.event(named, sanitizedEvent);
    inspector.snapshot(named, shown, { event: sanitizedEvent });
  };

  const inspect: ActorInspector = {
    next(event) {
      if (stopped) return;
      try {
        forward(event);
      } catch {
        // An inspector never breaks the actor it watches: an event it cannot show is dropped.
      }
    },
  };

  function forward(event: Parameters<NonNullable<ActorInspector['next']>>[0]): void {
    switch (event.type) {
      case '@xstate.transition':
        onStoreTransition(event as unknown as Parameters<typeof onStoreTransition>[0]);
        return;
      case '@xstate.actor':
      case '@xstate.event':
      case '@xstate.snapshot':
        inspector.inspect.next?.(presanitized(event as InspectionEvent));
        return;
      default:
        // microsteps and actions: not shown by the inspector.
        return;
    }
  }

  return {
    inspect,
    get sent() {
      return sent;
    },
    stop() {
      stopped = true;
      inspector.stop();
    },
  };
}

/** Keys of a context that name a root actor, in order of preference. */
const LABEL_KEYS = ['taskId', 'runId', 'agentId', 'role'] as const;

/**
 * The name shown for a root actor without an id: its machine's id and what
 * its context says it is for (`task 0193…`, `workflow-run <item>`, `agent
 * <id>`, `pool coding`).
 */
function actorLabel(actorRef: { sessionId: string; logic: unknown; getSnapshot(): unknown }): string {
  const machineId = (actorRef.logic as { config?: { id?: unknown } } | undefined)?.config?.id;
  const base = typeof machineId === 'string' ? machineId : actorRef.sessionId;
  let context: Record<string, unknown> | undefined;
  try {
    context = (actorRef.getSnapshot() as { context?: Record<string, unknown> } | undefined)?.context;
  } catch {
    return base;
  }
  for (const key of LABEL_KEYS) {
    const value = context?.[key];
    if (typeof value === 'string' && value !== '') return `${base} ${value}`;
  }
  return base;
}

/** The event with its snapshot, event and actor's snapshot already sanitized. */
function presanitized(event: InspectionEvent): InspectionEvent {
  const actorRef = event.actorRef as unknown as {
    sessionId: string;
    id: string;
    logic: unknown;
    _parent?: unknown;
    getSnapshot(): unknown;
  };
  const labelled = event.type === '@xstate.actor' && actorRef.id === actorRef.sessionId;
  const ref = {
    sessionId: actorRef.sessionId,
    // Read when the library converts the event (after the actor started: its snapshot is readable then).
    get id(): string {
      return labelled ? actorLabel(actorRef) : actorRef.id;
    },
    logic: actorRef.logic,
    _parent: actorRef._parent,
    getSnapshot: () => {
      try {
        return sanitizeForInspection(actorRef.getSnapshot());
      } catch {
        return { status: 'active' };
      }
    },
  };
  const out: Record<string, unknown> = { ...event, actorRef: ref };
  if ('event' in event) out.event = sanitizeForInspection(event.event);
  if ('snapshot' in event) out.snapshot = sanitizeForInspection(event.snapshot);
  if ('sourceRef' in event && event.sourceRef !== undefined) {
    out.sourceRef = { sessionId: (event.sourceRef as { sessionId: string }).sessionId };
  }
  return out as unknown as InspectionEvent;
}

/**
 * An actor event carries its machine's config as a JSON string (the
 * inspector draws the chart from it), which may hold a literal initial
 * context: it is parsed, sanitized and serialized again.
 */
function withSanitizedDefinition(event: StatelyInspectionEvent): StatelyInspectionEvent {
  if (event.type !== '@xstate.actor' || typeof event.definition !== 'string') return event;
  let definition: string | undefined;
  try {
    definition = JSON.stringify(sanitizeForInspection(JSON.parse(event.definition)));
  } catch {
    definition = undefined;
  }
  return { ...event, definition };
}
