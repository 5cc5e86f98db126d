import { z } from 'zod';

/** A JSON-RPC 2.0 request id on the wire: a string, a number or null. */
export const JsonRpcIdSchema = z.union([z.string(), z.number(), z.null()]);
/** A JSON-RPC 2.0 request id as on the wire (inferred from `JsonRpcIdSchema`). */
export type JsonRpcId = z.infer<typeof JsonRpcIdSchema>;

/** A request (with `id`) or a notification (without). */
export const JsonRpcRequestSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcIdSchema.optional(),
  method: z.string(),
  params: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(),
});
/** A JSON-RPC 2.0 request or notification as on the wire (inferred from `JsonRpcRequestSchema`). */
export interface JsonRpcRequest extends z.infer<typeof JsonRpcRequestSchema> {}

/** The `error` member of a JSON-RPC 2.0 failure on the wire: code, message and optional data. */
export const JsonRpcErrorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});

/** A JSON-RPC 2.0 success response on the wire: the request's id and its result. */
export const JsonRpcSuccessSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcIdSchema,
  result: z.unknown(),
});
/** A JSON-RPC 2.0 failure response on the wire: the request's id and an error object. */
export const JsonRpcFailureSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcIdSchema,
  error: JsonRpcErrorObjectSchema,
});
/** A JSON-RPC 2.0 response on the wire: a success or a failure. */
export const JsonRpcResponseSchema = z.union([JsonRpcSuccessSchema, JsonRpcFailureSchema]);
/** A JSON-RPC 2.0 success response as on the wire (inferred from `JsonRpcSuccessSchema`). */
export interface JsonRpcSuccess extends z.infer<typeof JsonRpcSuccessSchema> {}
/** A JSON-RPC 2.0 failure response as on the wire (inferred from `JsonRpcFailureSchema`). */
export interface JsonRpcFailure extends z.infer<typeof JsonRpcFailureSchema> {}
/** A JSON-RPC 2.0 response as on the wire (inferred from `JsonRpcResponseSchema`). */
export type JsonRpcResponse = z.infer<typeof JsonRpcResponseSchema>;

/** A JSON-RPC 2.0 notification on the wire: a method and named params, no id. */
export const JsonRpcNotificationSchema = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string(),
  params: z.record(z.string(), z.unknown()).optional(),
});
/** A JSON-RPC 2.0 notification as on the wire (inferred from `JsonRpcNotificationSchema`). */
export interface JsonRpcNotification extends z.infer<typeof JsonRpcNotificationSchema> {}
