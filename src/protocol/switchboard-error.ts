/**
 * The one error base of switchboard. Every error class extends
 * `SwitchboardError`; its `code` is a stable string from `ERROR_CODES`, its
 * message says what to do, `details` holds the facts (ids, limits, problems).
 * `docs/errors.md` lists every code of this table (a test keeps them equal).
 */

/** Every error code, by the class that throws it. */
export const ERROR_CODES = {
  /** The broker's refusals; the transport maps each to a JSON-RPC code. */
  BrokerError: [
    'PARSE_ERROR',
    'INVALID_REQUEST',
    'METHOD_NOT_FOUND',
    'INVALID_PARAMS',
    'INTERNAL_ERROR',
    'ANSWER_BUDGET_SPENT',
    'A2A_UNKNOWN_TOKEN',
    'A2A_UNKNOWN_AGENT',
    'A2A_UNKNOWN_TASK',
    'A2A_CROSS_CONTEXT_DENIED',
    'A2A_INVALID_TRANSITION',
    'A2A_TASK_TERMINAL',
    'A2A_SEND_CAP',
    'A2A_NO_PEERS',
    'A2A_PAYLOAD_TOO_LARGE',
    'A2A_EVENTS_PRUNED',
  ],
  /** Another live broker owns the database file. */
  BrokerOwnershipError: ['BROKER_FILE_OWNED'],
  /** `serve --listen`: the socket's path is unsafe or already served. */
  SocketError: ['SOCKET_UNSAFE', 'SOCKET_IN_USE'],
  /** A task actor refused a move the broker had already checked: a defect. */
  TaskActorError: ['TASK_ACTOR_REFUSED'],
  BusError: ['BUS_CLOSED', 'BUS_INVALID_ENVELOPE', 'BUS_INVALID_ARGUMENT', 'BUS_BACKEND'],
  CoordinatorError: [
    'COORD_INVALID_ARGUMENT',
    'COORD_UNKNOWN_WORKFLOW',
    'COORD_UNKNOWN_ITEM',
    'COORD_ITEM_FINAL',
    'COORD_APPROVAL_REFUSED',
    'COORD_CLOSED',
    'COORD_FILE_OWNED',
    'COORD_SETTLE_TIMEOUT',
  ],
  /** The leader lease of Coordinators sharing a PostgreSQL database. */
  CoordinatorLeaseError: ['COORD_FENCED', 'COORD_LEASE_INVALID_OPTIONS', 'COORD_LEASE_BACKEND'],
  WorkerError: [
    'WORKER_NO_ATOMIC_EFFECTS',
    'WORKER_LEASE_LOST',
    'WORKER_STOPPING',
    'WORKER_INVALID_OPTIONS',
    'WORKER_HANDLER_LOAD',
    'POOL_INVALID_DEPLOYMENT',
  ],
  /** Thrown by a handler: the hop is dead-lettered without retries. */
  NonRetryableError: ['WORKER_NON_RETRYABLE'],
  WorkflowError: [
    'WORKFLOW_INVALID',
    'GOVERNANCE_INVALID_POLICY',
    'RETRY_POLICY_INVALID',
    'WORKFLOW_RUN_SNAPSHOT_INVALID',
  ],
  ContextStoreError: ['CONTEXT_CLOSED', 'CONTEXT_NOT_JSON', 'CONTEXT_INVALID_ARGUMENT', 'CONTEXT_BACKEND'],
  AuditError: [
    'AUDIT_INVALID_ENTRY',
    'AUDIT_HEAD_MISSING',
    'AUDIT_NO_TRANSACTION',
    'AUDIT_BAD_KEY',
    'AUDIT_BAD_DIGEST',
  ],
  SchemaVersionError: ['SCHEMA_TOO_NEW', 'SCHEMA_TOO_OLD'],
  /** The PostgreSQL store: a bad URL, an unreachable or lost server, a missing client, a refused statement. */
  PostgresError: ['PG_INVALID_URL', 'PG_UNREACHABLE', 'PG_CLIENT_MISSING', 'PG_QUERY_FAILED'],
  TransportError: ['CONNECTION_CLOSED', 'INCOMPATIBLE_HOST', 'SPAWN_FAILED', 'PROTOCOL_VIOLATION', 'NO_BROKER'],
  CliUsageError: ['CLI_USAGE'],
  InspectorError: ['INSPECTOR_LISTEN_FAILED'],
  ConsoleError: ['CONSOLE_LISTEN_FAILED'],
  /** `switchboard console users`: a name already holding a live token, or no such user. */
  ConsoleUserError: ['CONSOLE_USER_EXISTS', 'CONSOLE_USER_UNKNOWN'],
  /** A model agent's MCP server: it cannot be reached, or its tools' names clash with other tools. */
  McpServerError: ['MCP_SERVER_UNREACHABLE', 'MCP_TOOL_NAME_TAKEN'],
  /** `switchboard gateway`: its keys file, a key name already live or unknown, an address it cannot serve. */
  GatewayError: [
    'GATEWAY_KEY_EXISTS',
    'GATEWAY_KEY_UNKNOWN',
    'GATEWAY_KEYS_FILE',
    'GATEWAY_LISTEN_FAILED',
    'GATEWAY_PUSH_FILE',
  ],
  /** Remote A2A agents: one that cannot be reached or has no usable card, the remotes file, a local name. */
  RemoteAgentError: ['REMOTE_UNREACHABLE', 'REMOTE_CARD_INVALID', 'REMOTE_FILE', 'REMOTE_NAME_TAKEN', 'REMOTE_UNKNOWN'],
} as const satisfies Record<string, readonly string[]>;

/** The name of one error class of switchboard (a key of `ERROR_CODES`). */
export type ErrorClassName = keyof typeof ERROR_CODES;
/** The codes one class throws. */
export type ErrorCodeOf<C extends ErrorClassName> = (typeof ERROR_CODES)[C][number];
/** Any error code of switchboard (one of `SWITCHBOARD_ERROR_CODES`). */
export type SwitchboardErrorCode = ErrorCodeOf<ErrorClassName>;

/** Every code, each once. */
export const SWITCHBOARD_ERROR_CODES: readonly SwitchboardErrorCode[] = Object.values(ERROR_CODES).flat();

/** Options of a `SwitchboardError`: the facts in `details` and the error it wraps in `cause`. */
export interface SwitchboardErrorOptions {
  /** What the error names, as JSON. */
  details?: Record<string, unknown>;
  /** The error this one wraps. */
  cause?: unknown;
}

/** The one error base of switchboard: a stable string `code`, a message that says what to do, and `details`. */
export class SwitchboardError extends Error {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  readonly code: SwitchboardErrorCode;
  /** What the error names (ids, limits, the path of a bad field), as JSON. */
  readonly details: Record<string, unknown> | undefined;

  constructor(code: SwitchboardErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details;
  }
}

/** Whether a value is a `SwitchboardError` (any subclass). */
export function isSwitchboardError(value: unknown): value is SwitchboardError {
  return value instanceof SwitchboardError;
}
