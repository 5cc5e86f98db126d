import type { A2ATool, A2AToolResult } from './a2a-tool.js';

/**
 * The `A2A` tool as the Vercel AI SDK takes it in `tools` (a `Tool` of the
 * SDK: description, input schema, `execute`). Declared here rather than as
 * the SDK's `Tool` type, so that a project without the optional peer `ai`
 * type-checks.
 */
export interface AISDKA2ATool {
  /** What the model reads about the tool. */
  description: string;
  /** The tool's JSON Schema, as the SDK reads it. */
  inputSchema: AISDKInputSchema;
  /** Runs the tool; never throws: a failure is a result saying what to fix. */
  execute(input: unknown, options: unknown): Promise<A2AToolResult>;
}

/**
 * The tool's input schema: the SDK's `jsonSchema()` of the tool's JSON
 * Schema, typed as the Standard Schema the SDK also takes (which it is too):
 * every value passes, since the tool checks its input itself.
 */
export interface AISDKInputSchema {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => { readonly value: unknown };
    /** The JSON Schema, for the model's provider. */
    readonly jsonSchema: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>;
      readonly output: (options: { readonly target: string }) => Record<string, unknown>;
    };
  };
}

/**
 * Adapts the `A2A` tool to the Vercel AI SDK: `tool()` with the tool's JSON
 * Schema (`jsonSchema()`, no validation by the SDK: the tool checks the
 * input and answers a bad one with a result saying what to fix) and its
 * `execute`. Use it as `tools: { A2A: await toAISDKTool(tool) }`. `ai` is an
 * optional peer dependency, imported when this is called.
 */
export async function toAISDKTool(tool: A2ATool): Promise<AISDKA2ATool> {
  const ai = await import('ai');
  const schema = tool.jsonSchema as Record<string, unknown>;
  const standard: AISDKInputSchema = {
    '~standard': {
      version: 1,
      vendor: 'a2a-switchboard',
      validate: (value) => ({ value }),
      jsonSchema: { input: () => schema, output: () => schema },
    },
  };
  // The SDK reads the `jsonSchema()` schema first: the Standard Schema face is for the types.
  const inputSchema = Object.assign(ai.jsonSchema<unknown>(tool.jsonSchema), standard);
  const execute = (input: unknown) => tool.execute(input);
  const made = ai.tool<unknown, A2AToolResult>({ description: tool.description, inputSchema, execute });
  return { ...made, description: tool.description, inputSchema, execute };
}
