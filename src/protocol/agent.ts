import { z } from 'zod';
import { IdSchema, NameSchema } from './task.js';

export const AgentKindSchema = z.enum(['subagent', 'parent']);
export type AgentKind = z.infer<typeof AgentKindSchema>;

export const SkillSchema = z.object({
  id: IdSchema,
  name: NameSchema,
  description: z.string().max(4000).optional(),
  tags: z.array(z.string().max(128)).max(64).optional(),
  examples: z.array(z.string().max(4000)).max(64).optional(),
});
export type Skill = z.infer<typeof SkillSchema>;

export const AgentCardSchema = z.object({
  agentId: IdSchema,
  name: NameSchema,
  contextId: IdSchema,
  kind: AgentKindSchema,
  description: z.string(),
  skills: z.array(SkillSchema),
});
export type AgentCard = z.infer<typeof AgentCardSchema>;
