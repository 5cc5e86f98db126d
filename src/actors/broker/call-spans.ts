import { ATTR, SPAN, SpanKind, activeContext, tracingOn } from '../../telemetry/tracing.js';
import { withSpan } from '../../telemetry/with-span.js';

const OK = { [ATTR.callOutcome]: 'ok' } as const;
const FAILED = { [ATTR.callOutcome]: 'error' } as const;

/**
 * Runs one broker call under its span, `switchboard.broker.call` (server),
 * under the active context (the work item's trace for the Coordinator's
 * mirror): the method and its outcome, and the error's type and code when it
 * fails; never a param (tokens and bodies travel there). With no tracer
 * provider registered the call is made as it is: nothing is made.
 */
export function tracedCall<M extends string, R>(
  method: M,
  raw: unknown,
  call: (method: M, raw: unknown) => Promise<R>,
): Promise<R> {
  if (!tracingOn()) return call(method, raw);
  return withSpan(
    SPAN.brokerCall,
    activeContext(),
    { kind: SpanKind.SERVER, attributes: () => ({ [ATTR.rpcSystem]: 'jsonrpc', [ATTR.rpcMethod]: method }) },
    (span) =>
      call(method, raw).then(
        (result) => {
          span.annotate(OK);
          return result;
        },
        (error: unknown) => {
          span.annotate(FAILED);
          throw error;
        },
      ),
  );
}
