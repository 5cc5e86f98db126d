/** What can be wrong with a workflow definition: the codes, and one problem with its path. */

export const WORKFLOW_PROBLEM_CODES = [
  /** The text is not JSON. */
  'INVALID_JSON',
  /** A field has the wrong shape (from the zod schema). */
  'SCHEMA',
  /** `start` names no stage. */
  'MISSING_START',
  /** A stage's role is not among the known roles. */
  'UNKNOWN_ROLE',
  /** A rule's `goto` names no stage. */
  'UNKNOWN_TARGET',
  /** No path of rules leads from `start` to the stage. */
  'UNREACHABLE_STAGE',
  /** A loop of stages where neither a stage's `maxVisits` nor a rule's `maxTraversals` bounds it. */
  'UNBOUNDED_CYCLE',
  /** An earlier rule that can never be exhausted always matches first. */
  'UNREACHABLE_RULE',
  /** The retry policy of a stage (defaults merged) is inconsistent. */
  'INVALID_RETRY_POLICY',
  /** Two different definitions share one id and version. */
  'DUPLICATE_VERSION',
  /** A file could not be read, or is not in a supported format. */
  'UNREADABLE',
  /** A stage runs nothing, or more than one thing, or has a field its kind does not take. */
  'STAGE_KIND',
  /** A stage's conditional success rules may all miss, and no rule without a condition follows them. */
  'NO_FALLBACK_RULE',
  /** A definition id with `--`, kept for the child workflows of a stage's branches. */
  'RESERVED_ID',
] as const;
/** What is wrong with a workflow definition, as a problem names it (one of `WORKFLOW_PROBLEM_CODES`). */
export type WorkflowProblemCode = (typeof WORKFLOW_PROBLEM_CODES)[number];

/** One problem of a refused workflow definition: its code, its path into the definition, and a message. */
export interface WorkflowProblem {
  /** What is wrong, as a code (`WORKFLOW_PROBLEM_CODES`). */
  code: WorkflowProblemCode;
  /** Where, as a path into the definition (`['stages', 'testing', 'next', 0, 'goto']`). */
  path: (string | number)[];
  /** What is wrong and where, and what to do. */
  message: string;
}
