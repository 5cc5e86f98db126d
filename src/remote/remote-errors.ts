import { type ErrorCodeOf, SwitchboardError, type SwitchboardErrorOptions } from '../protocol/switchboard-error.js';

/**
 * The refusals of calling out to remote A2A agents: a remote that cannot be
 * reached or whose card is not an A2A v1.0 card, the remotes file, a local
 * name already taken or unknown.
 */
export class RemoteAgentError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'RemoteAgentError'>;
  constructor(code: ErrorCodeOf<'RemoteAgentError'>, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}
