import { z } from 'zod';
import { MAX_ID_CHARS, MAX_NAME_CHARS } from './bounds.js';
import { skeleton } from './confusables/skeleton.js';
import { IdSchema, NameSchema } from './task.js';
import { named } from './wire-schema.js';

/** An agent's kind on the wire: `subagent` (a worker) or `parent` (the agent that delegates). */
export const AgentKindSchema = z.enum(['subagent', 'parent']);
/** An agent's kind as on the wire (inferred from `AgentKindSchema`). */
export type AgentKind = z.infer<typeof AgentKindSchema>;

/**
 * What a valid agent name is (the text of the error a refused name gets).
 * Names are shown to models as `from`, so two names that look alike must not
 * both be live: see `agentNameProblem`, `foldAgentName` and `agentNameSkeleton`.
 */
export const AGENT_NAME_RULE =
  `a name is 1 to ${MAX_NAME_CHARS} characters after Unicode NFKC normalization, not blank, with no leading or trailing ` +
  'space, no control, format (zero-width, bidi), default-ignorable (variation selectors, Hangul fillers, U+034F), ' +
  'blank (U+2800), separator or unassigned characters, and letters of one script only among Latin, Greek, ' +
  'Cyrillic and Armenian';

/**
 * Characters no name or identifier a model sees may hold: every \p{C} (Cc,
 * Cf, Cs, Co, Cn), line/paragraph separators, every Default_Ignorable_Code_Point
 * (drawn as nothing: U+034F, variation selectors, Mongolian free variation
 * selectors, Khmer inherent vowels, Hangul fillers) and U+2800 BRAILLE
 * PATTERN BLANK (a symbol drawn as a blank).
 */
const INVISIBLE = /[\p{C}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800]/u;
/** Whitespace other than U+0020 (NFKC already maps no-break and other spaces to U+0020). */
const ODD_SPACE = /[^\S ]/u;
/** Scripts whose letters are confusable with one another (Latin `o`, Cyrillic `о`, Greek `ο`). */
const CONFUSABLE_SCRIPTS: readonly [string, RegExp][] = [
  ['Latin', /\p{Script=Latin}/u],
  ['Greek', /\p{Script=Greek}/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
  ['Armenian', /\p{Script=Armenian}/u],
];

/** Why an (NFKC-normalized) text cannot be an agent name, or null when it can. */
export function agentNameProblem(name: string): string | null {
  const textProblem = visibleTextProblem(name);
  if (textProblem !== null) return textProblem;
  if (name !== name.trim()) return 'it has leading or trailing whitespace';
  if (ODD_SPACE.test(name)) return 'it holds whitespace other than a plain space';
  const scripts = CONFUSABLE_SCRIPTS.filter(([, re]) => re.test(name)).map(([script]) => script);
  if (scripts.length > 1) return `it mixes ${scripts.join(' and ')} letters`;
  return null;
}

/** Why a text a model sees (a name, a skill's name, an id) is not visible text, or null. */
export function visibleTextProblem(text: string): string | null {
  if (text.trim() === '') return 'it is blank';
  const invisible = INVISIBLE.exec(text);
  if (invisible !== null) {
    const code = invisible[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    return `it holds the invisible or control character U+${code}`;
  }
  return null;
}

/**
 * The key two agent names are compared by: NFKC, then lower case (then NFKC
 * again, as lower-casing can leave a text unnormalized). `Bob`, `bob` and
 * full-width `ｂｏｂ` fold to one key.
 */
export function foldAgentName(name: string): string {
  return name.normalize('NFKC').toLowerCase().normalize('NFKC');
}

/**
 * The key two agent names are confusable by: the UTS #39 skeleton of the
 * NFKC name (`skeleton`), then lower case (names are compared
 * case-insensitively). `ӏеаԁ` (Cyrillic), `ǀead`, `Ꮮead` (Cherokee), `ꓡead`
 * (Lisu), `ʟᴇᴀᴅ` (small capitals), `Iead` and `1ead` all have the key of
 * `lead`; so do `coder1` and `coderl`, as UTS #39 has it (`1`, `I` and `l`
 * look alike), while `coderi` keeps its own.
 */
export function agentNameSkeleton(name: string): string {
  return skeleton(name.normalize('NFKC')).toLowerCase();
}

/**
 * An agent's name as registered: normalized to NFKC, then checked by
 * `agentNameProblem`. Names read back from a database are `NameSchema`
 * (a name stored before this rule keeps working as stored).
 */
export const AgentNameSchema = z
  .string()
  .overwrite((s) => s.normalize('NFKC'))
  .min(1)
  .max(MAX_NAME_CHARS)
  .superRefine((name, ctx) => {
    const problem = agentNameProblem(name);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: `invalid name (${problem}): ${AGENT_NAME_RULE}` });
  });

/** Visible text only (no control, format or separator characters; not blank): a context id or skill field a model sees. */
function visible<S extends z.ZodString>(schema: S, what: string) {
  return schema.superRefine((text, ctx) => {
    const problem = visibleTextProblem(text);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: `invalid ${what} (${problem})` });
  });
}

/** A context id as given at registration: visible text, compared exactly (not folded). */
export const RegisterContextIdSchema = visible(z.string().min(1).max(MAX_ID_CHARS), 'context id');

/** One skill of an agent card on the wire: id, name and optional description, tags and examples. */
export const SkillSchema = z.object({
  id: IdSchema,
  name: NameSchema,
  description: z.string().max(4000).optional(),
  tags: z.array(z.string().max(128)).max(64).optional(),
  examples: z.array(z.string().max(4000)).max(64).optional(),
});
/** One skill of an agent card as on the wire (inferred from `SkillSchema`). */
export interface Skill extends z.infer<typeof SkillSchema> {}

/** A skill as given at registration: its id and name are visible text, its name NFKC-normalized. */
export const RegisterSkillSchema = SkillSchema.extend({
  id: visible(z.string().min(1).max(MAX_ID_CHARS), 'skill id'),
  name: visible(
    z
      .string()
      .overwrite((s) => s.normalize('NFKC'))
      .min(1)
      .max(MAX_NAME_CHARS),
    'skill name',
  ),
});

/** An agent card on the wire: who a registered agent is, in which context, and what it can do. */
export const AgentCardSchema = z.object({
  agentId: IdSchema,
  name: NameSchema,
  contextId: IdSchema,
  kind: named<AgentKind>(AgentKindSchema),
  description: z.string(),
  skills: z.array(named<Skill>(SkillSchema)),
});
/** An agent card as on the wire (inferred from `AgentCardSchema`). */
export interface AgentCard extends z.infer<typeof AgentCardSchema> {}
