import { fc } from '@fast-check/vitest';
import { V03_CARRY_KEY, V1_CARRY_KEY } from '../../src/protocol/a2a-v1/carry.js';

/**
 * Generators of valid v0.3 values (our wire shapes) and of v1.0 values, for
 * the round-trip properties. Metadata often holds the two carry keys, with
 * values shaped like carriers (nested `shadow`, `absent`, extras) and not:
 * the mapping must undo itself for those too.
 */

const KEYS = ['a', 'b', V1_CARRY_KEY, V03_CARRY_KEY, 'shadow', 'value'] as const;

/** Whether a JSON value holds a `__proto__` key anywhere (the wire refuses those before any schema). */
function holdsProtoKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsProtoKey);
  if (value === null || typeof value !== 'object') return false;
  return Object.keys(value).some(
    (key) => key === '__proto__' || holdsProtoKey((value as Record<string, unknown>)[key]),
  );
}

/**
 * Any JSON value of at most `maxDepth` levels the wire takes: params with a
 * `__proto__` key anywhere are refused at the door (`INVALID_PARAMS`), so no
 * mapping ever sees one (and the schemas would drop it).
 */
const wireJson = (maxDepth: number) => fc.jsonValue({ maxDepth }).filter((value) => !holdsProtoKey(value));

const carrierLike: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    wireJson(2),
    tie('value').map((shadow) => ({ shadow })),
    fc.constantFrom({ absent: true }, { absent: true, mediaType: '' }, { wrapped: true }, { final: false }),
    fc.record(
      {
        mediaType: fc.constantFrom('text/plain', ''),
        filename: fc.string({ maxLength: 4 }),
        wrapped: fc.constant(true),
        extensions: fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 }),
        referenceTaskIds: fc.array(fc.string({ maxLength: 4 }), { minLength: 1, maxLength: 2 }),
        shadow: tie('value'),
        absent: fc.constant(true),
        final: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
  ),
})).value;

export const metadataArb = fc.option(
  fc.dictionary(fc.constantFrom(...KEYS), carrierLike, { maxKeys: 3 }) as fc.Arbitrary<Record<string, unknown>>,
  { nil: undefined },
);

const textArb = fc.string({ unit: 'binary', maxLength: 60 });
const base64Arb = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64'));
export const idArb = fc.string({ minLength: 1, maxLength: 20 });
export const isoArb = fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString());

function withMetadata<T extends object>(
  arb: fc.Arbitrary<T>,
): fc.Arbitrary<T & { metadata?: Record<string, unknown> }> {
  return fc
    .tuple(arb, metadataArb)
    .map(([value, metadata]) => (metadata === undefined ? value : { ...value, metadata }));
}

export const partArb = fc.oneof(
  withMetadata(fc.record({ kind: fc.constant('text' as const), text: textArb })),
  withMetadata(
    fc.record({
      kind: fc.constant('file' as const),
      file: fc.oneof(
        fc.record(
          {
            name: fc.string({ maxLength: 10 }),
            mimeType: fc.constantFrom('text/plain', 'image/png'),
            uri: fc.webUrl(),
          },
          { requiredKeys: ['uri'] },
        ),
        fc.record(
          {
            name: fc.string({ maxLength: 10 }),
            mimeType: fc.constantFrom('text/plain', 'image/png'),
            bytes: base64Arb,
          },
          { requiredKeys: ['bytes'] },
        ),
      ),
    }),
  ),
  withMetadata(
    fc.record({
      kind: fc.constant('data' as const),
      data: fc.oneof(
        fc.dictionary(fc.constantFrom(...KEYS), wireJson(2)),
        wireJson(1).map((value) => ({ value })),
      ),
    }),
  ),
);

export const messageArb = withMetadata(
  fc.record({
    kind: fc.constant('message' as const),
    messageId: idArb,
    role: fc.constantFrom('user' as const, 'agent' as const),
    from: fc.string({ minLength: 1, maxLength: 12 }),
    taskId: idArb,
    contextId: idArb,
    timestamp: isoArb,
    parts: fc.array(partArb, { minLength: 1, maxLength: 3 }),
  }),
);

export const stateArb = fc.constantFrom(
  'submitted' as const,
  'working' as const,
  'input-required' as const,
  'auth-required' as const,
  'completed' as const,
  'canceled' as const,
  'failed' as const,
  'rejected' as const,
);

export const statusArb = fc.record(
  { state: stateArb, message: messageArb, timestamp: isoArb },
  { requiredKeys: ['state', 'timestamp'] },
);

export const artifactArb = withMetadata(
  fc.record(
    {
      artifactId: idArb,
      name: fc.string({ maxLength: 10 }),
      description: fc.string({ maxLength: 10 }),
      parts: fc.array(partArb, { minLength: 1, maxLength: 3 }),
    },
    { requiredKeys: ['artifactId', 'parts'] },
  ),
);

export const taskArb = withMetadata(
  fc.record({
    kind: fc.constant('task' as const),
    id: idArb,
    contextId: idArb,
    agentName: idArb,
    agentContextId: idArb,
    requesterName: idArb,
    status: statusArb,
    history: fc.array(messageArb, { maxLength: 3 }),
    artifacts: fc.array(artifactArb, { maxLength: 2 }),
    createdAt: isoArb,
    updatedAt: isoArb,
  }),
);

export const taskEventArb = fc.oneof(
  fc.record({
    kind: fc.constant('status-update' as const),
    taskId: idArb,
    contextId: idArb,
    status: statusArb,
    final: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('artifact-update' as const),
    taskId: idArb,
    contextId: idArb,
    artifact: artifactArb,
    append: fc.boolean(),
    lastChunk: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('agent-update' as const),
    taskId: idArb,
    contextId: idArb,
    agentName: idArb,
    agentContextId: idArb,
    presence: fc.constantFrom('left' as const, 'back' as const),
  }),
);

const skillArb = fc.record(
  {
    id: idArb,
    name: idArb,
    description: fc.string({ maxLength: 10 }),
    tags: fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }),
    examples: fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }),
  },
  { requiredKeys: ['id', 'name'] },
);

export const agentCardArb = fc.record({
  agentId: idArb,
  name: idArb,
  contextId: idArb,
  kind: fc.constantFrom('subagent' as const, 'parent' as const),
  description: fc.string({ maxLength: 20 }),
  skills: fc.array(skillArb, { maxLength: 2 }),
});

/** A v1.0 part as any client may send it: text with a media type, data that is not an object, and so on. */
export const v1PartArb = fc
  .tuple(
    fc.oneof(
      textArb.map((text) => ({ text })),
      base64Arb.map((raw) => ({ raw })),
      fc.webUrl().map((url) => ({ url })),
      wireJson(2).map((data) => ({ data })),
    ),
    fc.record(
      { filename: fc.string({ maxLength: 6 }), mediaType: fc.constantFrom('text/plain', 'application/json', '') },
      { requiredKeys: [] },
    ),
    metadataArb,
  )
  .map(([content, extra, metadata]) => ({ ...content, ...extra, ...(metadata === undefined ? {} : { metadata }) }));
