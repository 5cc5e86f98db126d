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

/** What `putCarried` puts under its key, besides the fields: the key's own value, or that there was no metadata. */
const CarriedSchema = z.object({ shadow: z.unknown().optional(), absent: z.literal(true).optional() }).loose();

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
  const parsed = CarriedSchema.safeParse(raw);
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

/** What a carrier of extras may hold besides the extras: the metadata's own value of the key, or that it had none. */
const CARRIER_SHAPE = { shadow: z.unknown().optional(), absent: z.literal(true).optional() };

/** The strict schema of a carrier of `shape`'s extras, built once per shape. */
const carrierSchemas = new WeakMap<z.ZodRawShape, z.ZodType>();
function carrierSchema(shape: z.ZodRawShape): z.ZodType {
  let schema = carrierSchemas.get(shape);
  if (schema === undefined) {
    schema = z.strictObject({ ...shape, ...CARRIER_SHAPE });
    carrierSchemas.set(shape, schema);
  }
  return schema;
}

/** The extras a carrier holds (`undefined` members dropped). */
function extrasOf(carrier: Meta): Meta {
  const out: Meta = {};
  for (const [k, v] of Object.entries(carrier)) if (k !== 'shadow' && k !== 'absent' && v !== undefined) out[k] = v;
  return out;
}

/** `metadata` with the carrier under `key` taken out and the key's own value (its `shadow`) put back. */
function restore(metadata: Meta, key: string, carrier: Meta): Meta {
  const out: Meta = {};
  for (const [k, v] of Object.entries(metadata)) if (k !== key) out[k] = v;
  if (Object.hasOwn(carrier, 'shadow')) out[key] = carrier.shadow;
  return out;
}

/**
 * The carrier of extras `metadata` holds under `key`, or undefined when what
 * is there is the caller's own value. A carrier is an object of exactly the
 * extras `shape` allows (that `accept` takes), plus `shadow` (the key's own
 * value) or `absent` (no metadata at all, then the key is its only member).
 * One with no extras is a carrier only when its `shadow`, put back, is one:
 * so `withExtras` and `takeExtras` undo each other for every value.
 */
function carrierOf(
  metadata: Meta | undefined,
  key: string,
  shape: z.ZodRawShape,
  accept: (extras: Meta) => boolean,
): Meta | undefined {
  if (metadata === undefined || !Object.hasOwn(metadata, key)) return undefined;
  const parsed = carrierSchema(shape).safeParse(metadata[key]);
  if (!parsed.success) return undefined;
  const carrier = parsed.data as Meta;
  const extras = extrasOf(carrier);
  const hasShadow = Object.hasOwn(carrier, 'shadow');
  if (!accept(extras)) return undefined;
  if (carrier.absent === true) {
    return !hasShadow && Object.keys(metadata).length === 1 && Object.keys(extras).length > 0 ? carrier : undefined;
  }
  if (Object.keys(extras).length > 0) return carrier;
  return hasShadow && carrierOf(restore(metadata, key, carrier), key, shape, accept) !== undefined
    ? carrier
    : undefined;
}

/**
 * Metadata with `extras` (fields the other version has no member for) under
 * `key`: unchanged when there are none, unless what the key holds would read
 * as a carrier (then it is wrapped, so that `takeExtras` gives it back).
 */
export function withExtras(
  metadata: Meta | undefined,
  key: string,
  extras: Meta,
  shape: z.ZodRawShape,
  accept: (extras: Meta) => boolean = () => true,
): Meta | undefined {
  const present = extrasOf(extras);
  if (Object.keys(present).length > 0) return putCarried(metadata, key, present);
  if (carrierOf(metadata, key, shape, accept) === undefined) return metadata;
  return { ...restore(metadata ?? {}, key, {}), [key]: { shadow: metadata?.[key] } };
}

/** The extras `withExtras` put under `key`, and the metadata it was given. */
export function takeExtras(
  metadata: Meta | undefined,
  key: string,
  shape: z.ZodRawShape,
  accept: (extras: Meta) => boolean = () => true,
): { extras: Meta; metadata: Meta | undefined } {
  const carrier = carrierOf(metadata, key, shape, accept);
  if (carrier === undefined || metadata === undefined) return { extras: {}, metadata };
  return { extras: extrasOf(carrier), metadata: carrier.absent === true ? undefined : restore(metadata, key, carrier) };
}
