import { readFileSync, readdirSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  invalidWorkflow,
  type WorkflowCheckOptions,
  WorkflowRegistry,
  parseWorkflowDefinitionJson,
} from '../../workflow/definition.js';
import type { WorkflowDefinition } from '../../protocol/workflow.js';

/**
 * Reads workflow definitions from files. Definitions are JSON: YAML would
 * need a parser this package does not depend on.
 */

/** The folder of definitions shipped with switchboard (`workflows/` at the package root). */
export const SHIPPED_WORKFLOWS_DIR = fileURLToPath(new URL('../../../workflows', import.meta.url));
/** The dev SDLC workflow shipped with the package (architect, coding, testing, devops). */
export const DEV_SDLC_WORKFLOW_PATH = join(SHIPPED_WORKFLOWS_DIR, 'dev-sdlc.json');

/** Options of `loadWorkflowFile` and `loadWorkflowDirectory`: the checks of `WorkflowCheckOptions` (the file names the source). */
export type WorkflowLoadOptions = Omit<WorkflowCheckOptions, 'source'>;

/** Reads and checks one `.json` definition; throws `WorkflowError` (`WORKFLOW_INVALID`) naming the file. */
export function loadWorkflowFile(path: string, options: WorkflowLoadOptions = {}): WorkflowDefinition {
  if (extname(path).toLowerCase() !== '.json') {
    throw invalidWorkflow(
      [{ code: 'UNREADABLE', path: [], message: 'workflow definitions are JSON files (.json)' }],
      path,
    );
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw invalidWorkflow(
      [{ code: 'UNREADABLE', path: [], message: `cannot read: ${(error as Error).message}` }],
      path,
    );
  }
  return parseWorkflowDefinitionJson(text, { ...options, source: path });
}

/**
 * Reads every `.json` definition of a folder into a registry. Every file is
 * checked; the first bad one throws (its error names the file).
 */
export function loadWorkflowDirectory(
  dir: string,
  options: WorkflowLoadOptions = {},
  registry: WorkflowRegistry = new WorkflowRegistry(),
): WorkflowRegistry {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => extname(n).toLowerCase() === '.json');
  } catch (error) {
    throw invalidWorkflow([{ code: 'UNREADABLE', path: [], message: `cannot list: ${(error as Error).message}` }], dir);
  }
  for (const name of names.sort()) registry.add(loadWorkflowFile(join(dir, name), options));
  return registry;
}
