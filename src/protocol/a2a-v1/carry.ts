import { z } from 'zod';
import { type BrokerError, invalidParams } from '../broker-error.js';
import type { V1Metadata } from './schemas.js';

/**
 * The metadata key, on the v1.0 side, holding the v0.3 fields v1.0 has no
 * member for (a message's `from` and `timestamp`, a task's parties and
 * stamps, an event's `final` when it differs from the state's).
 */
export const V03_CARRY_KEY = 'switchboard.v0_3';
/**
 * The metadata key, on the v0.3 side, holding the v1.0 fields v0.3 has no
 * member for (a message's `extensions` and `referenceTaskIds`, a text part's
 * `mediaType`, a data part whose value is not an object).
 */
export const V1_CARRY_KEY = 'a2a.v1';

/** Metadata in either version: a JSON object. */
type Meta = Record<string, unknown>;

/** A value that does not map between the versions: `INVALID_PARAMS`, its message says what to send instead. */
export function mappingError(message: string): BrokerError {
  return invalidParams(message);
}

/**
 * `metadata` with `fields` under `key`. A `key` the metadata already held is
 * kept inside as `shadow`, and absent metadata is marked `absent`, so that
 * `takeCarried` gives back exactly the metadata it was given.
 */
export function putCarried(metadata: Meta | undefined, key: string, fields: Meta): V1Metadata {
  const carried: Meta = { ...fields };
  const out: Meta = {};
  if (metadata === undefined) carried.absent = true;
  else {
    for (const [k, v] of Object.entries(metadata)) {
      if (k === key) carried.shadow = v;
      else out[k] = v;
    }
  }
  out[key] = carried;
  return out;
}

/** The carried fields under `key` (parsed by `schema`) and the metadata `putCarried` was given. */
export function takeCarried<S extends z.ZodType<Meta>>(
  metadata: Meta | undefined,
  key: string,
  schema: S,
  what: string,
): { fields: z.infer<S>; metadata: Meta | undefined } {
  const raw = metadata?.[key];
  const parsed = z
    .object({ shadow: z.unknown().optional(), absent: z.literal(true).optional() })
    .loose()
    .safeParse(raw);
  const fields = schema.safeParse(raw);
  if (!parsed.success || !fields.success) {
    throw mappingError(
      `this ${what} has no v0.3 fields under metadata["${key}"]: map only values this broker produced, or send it as a request`,
    );
  }
  if (parsed.data.absent === true) return { fields: fields.data, metadata: undefined };
  const out: Meta = {};
  for (const [k, v] of Object.entries(metadata ?? {})) if (k !== key) out[k] = v;
  if (Object.hasOwn(parsed.data, 'shadow')) out[key] = parsed.data.shadow;
  return { fields: fields.data, metadata: out };
}

/**
 * Metadata with the fields the other version has no member for: nothing is
 * added when every one of them is absent (then the metadata is unchanged).
 */
export function withExtras(metadata: Meta | undefined, key: string, extras: Meta): Meta | undefined {
  const present = Object.entries(extras).filter(([, v]) => v !== undefined);
  if (present.length === 0) return metadata;
  return putCarried(metadata, key, Object.fromEntries(present));
}

/**
 * The extras `withExtras` put under `key`, when what is there is exactly
 * such extras (parsed strictly by `schema`, at least one set); else no extras
 * and the metadata unchanged (then it was the caller's own).
 */
export function takeExtras<S extends z.ZodType<Meta>>(
  metadata: Meta | undefined,
  key: string,
  schema: S,
): { extras: Partial<z.infer<S>>; metadata: Meta | undefined } {
  const raw = metadata?.[key];
  const parsed = schema.safeParse(raw);
  if (raw === undefined || !parsed.success || Object.keys(parsed.data).length === 0) {
    return { extras: {}, metadata };
  }
  const { metadata: rest } = takeCarried(metadata, key, z.record(z.string(), z.unknown()), 'value');
  const extras: Meta = {};
  for (const [k, v] of Object.entries(parsed.data)) if (k !== 'shadow' && k !== 'absent') extras[k] = v;
  return { extras: extras as Partial<z.infer<S>>, metadata: rest };
}
