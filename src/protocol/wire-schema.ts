import type { z } from 'zod';

/**
 * A zod schema named by the types it parses (`Output`) and accepts (`Input`:
 * the same unless the schema has defaults or transforms). A schema built from
 * another one holds it as a `WireSchema` of the other's type, so that its
 * declaration names that type instead of spelling out zod's type of the other.
 */
export interface WireSchema<Output, Input = Output> extends z.ZodType<Output, Input> {}

/**
 * `schema` typed as the `WireSchema` of `Output` and `Input`: the same object,
 * only its static type is named (the compiler checks that it parses `Output`
 * from `Input`).
 */
export function named<Output, Input = Output>(schema: z.ZodType<Output, Input>): WireSchema<Output, Input> {
  return schema;
}
