import { z } from 'zod';
import { IdSchema, NameSchema } from './task.js';

/** An agent's kind on the wire: `subagent` (a worker) or `parent` (the agent that delegates). */
export const AgentKindSchema = z.enum(['subagent', 'parent']);
/** An agent's kind as on the wire (inferred from `AgentKindSchema`). */
export type AgentKind = z.infer<typeof AgentKindSchema>;

/** One skill of an agent card on the wire: id, name and optional description, tags and examples. */
export const SkillSchema = z.object({
  id: IdSchema,
  name: NameSchema,
  description: z.string().max(4000).optional(),
  tags: z.array(z.string().max(128)).max(64).optional(),
  examples: z.array(z.string().max(4000)).max(64).optional(),
});
/** One skill of an agent card as on the wire (inferred from `SkillSchema`). */
export type Skill = z.infer<typeof SkillSchema>;

/** An agent card on the wire: who a registered agent is, in which context, and what it can do. */
export const AgentCardSchema = z.object({
  agentId: IdSchema,
  name: NameSchema,
  contextId: IdSchema,
  kind: AgentKindSchema,
  description: z.string(),
  skills: z.array(SkillSchema),
});
/** An agent card as on the wire (inferred from `AgentCardSchema`). */
export type AgentCard = z.infer<typeof AgentCardSchema>;
