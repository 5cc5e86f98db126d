import type { HopInput, HopResume } from '../actors/worker/handler.js';
import type { Part } from '../protocol/parts.js';

/**
 * The conversation of a model agent as the AI SDK's model messages: the
 * first user message built from the hop, tool results, and what a resumed
 * hop's answer becomes. Pure: plain JSON in, plain JSON out.
 */

/** A model message of the AI SDK (`ModelMessage`) as JSON: kept in checkpoints as it is. */
export type ConversationMessage = Record<string, unknown>;

/** A tool result's output as the AI SDK takes it (`ToolResultOutput`). */
export type ToolOutput =
  | { type: 'text'; value: string }
  | { type: 'json'; value: unknown }
  | { type: 'error-text'; value: string };

/** The text of some parts: text as it is, data as JSON, files by name. */
export function partsText(parts: readonly Part[]): string {
  return parts
    .map((part) => {
      if (part.kind === 'text') return part.text;
      if (part.kind === 'data') return JSON.stringify(part.data);
      return `[file ${part.file.name ?? ''}]`.trim();
    })
    .join('\n');
}

/**
 * The hop's first user message: its input, after what the item's earlier
 * hops produced (role, hop and text of each), when there are any.
 */
export function firstPrompt(hop: HopInput): string {
  const input = partsText(hop.message.parts);
  const earlier = hop.context.outputs.filter((o) => o.hop < hop.headers.hop && o.parts.length > 0);
  if (earlier.length === 0) return input;
  const lines = earlier.map((o) => `[${o.role}, hop ${o.hop}]\n${partsText(o.parts)}`);
  return `Earlier work on this item:\n\n${lines.join('\n\n')}\n\nYour task:\n${input}`;
}

/** A user message of text. */
export function userMessage(text: string): ConversationMessage {
  return { role: 'user', content: text };
}

/** A tool message carrying the results of some tool calls. */
export function toolMessage(
  results: readonly { toolCallId: string; toolName: string; output: ToolOutput }[],
): ConversationMessage {
  return {
    role: 'tool',
    content: results.map((r) => ({
      type: 'tool-result',
      toolCallId: r.toolCallId,
      toolName: r.toolName,
      output: r.output,
    })),
  };
}

/** A tool's return value as a tool result: strings as text, anything else as JSON (undefined is null). */
export function toolOutput(value: unknown): ToolOutput {
  if (typeof value === 'string') return { type: 'text', value };
  return { type: 'json', value: value === undefined ? null : value };
}

/**
 * What resumes a suspended `ask` or `delegate` call: the answer's text (or
 * the children's outcomes, as JSON), or, when the asked role failed, an error
 * result saying so.
 */
export function resumeOutput(resume: HopResume, toolName: 'ask' | 'delegate'): ToolOutput {
  const parts = resume.reply.parts;
  if (resume.from?.outcome === 'failed') {
    const why = resume.from.error?.message ?? partsText(parts);
    return { type: 'error-text', value: `the ${resume.from.role} role could not answer: ${why}` };
  }
  if (toolName === 'delegate') {
    const data = parts.find((p) => p.kind === 'data');
    return data === undefined ? { type: 'text', value: partsText(parts) } : { type: 'json', value: data.data };
  }
  return { type: 'text', value: partsText(parts) };
}

/** The JSON in a model's final text: the whole text, or the body of a fenced ```json block in it. */
export function jsonInText(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)```/.exec(text);
  const body = (fenced?.[1] ?? text).trim();
  try {
    return { ok: true, value: JSON.parse(body) as unknown };
  } catch (error) {
    return { ok: false, error: `the answer is not JSON: ${(error as Error).message}` };
  }
}
