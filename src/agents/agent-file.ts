import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { McpServerConfig } from './mcp/mcp-servers.js';
import { type AgentLanguageModel, type ModelAgent, createModelAgent } from './model-agent.js';

/**
 * A value of an MCP server's `env` or `headers` in an agent file: the value
 * itself, or `{ "fromEnv": "NAME" }`, read from the worker's environment
 * variable NAME when the file is loaded (so that the file holds no secret).
 */
const SecretValueSchema = z.union([z.string(), z.strictObject({ fromEnv: z.string().min(1) })]);

/** An MCP server of an agent file: stdio (`command`) or streamable HTTP (`url`). */
const AgentFileMcpServerSchema = z.union([
  z.strictObject({
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), SecretValueSchema).optional(),
    /** Relative to the agent file. */
    cwd: z.string().min(1).optional(),
  }),
  z.strictObject({
    url: z.url({ protocol: /^https?$/ }),
    headers: z.record(z.string(), SecretValueSchema).optional(),
  }),
]);

/**
 * An agent file (`switchboard worker --agent FILE`): the provider package and
 * model, the system prompt, prices and limits, as JSON. API keys are not in
 * it: the provider reads them from the environment (`OPENAI_API_KEY`, ...).
 */
export const AgentFileSchema = z.strictObject({
  /** The AI SDK provider: a package (`@ai-sdk/openai`) or a module path, relative to the agent file. */
  provider: z.string().min(1),
  /** The provider's export (default: the package's last name segment, `openai`, else the default export). */
  export: z.string().min(1).optional(),
  /** The model id, as the provider names it. */
  model: z.string().min(1),
  system: z.string().optional(),
  pricing: z
    .strictObject({
      inputPerMTok: z.number().nonnegative(),
      outputPerMTok: z.number().nonnegative(),
      cachedInputPerMTok: z.number().nonnegative().optional(),
    })
    .optional(),
  maxSteps: z.number().int().min(1).optional(),
  budget: z
    .strictObject({ maxTokens: z.number().int().min(1).optional(), maxCostUsd: z.number().positive().optional() })
    .optional(),
  ask: z.union([z.boolean(), z.strictObject({ roles: z.array(z.string().min(1)).min(1) })]).optional(),
  delegate: z.boolean().optional(),
  /** MCP servers whose tools the model may call (`createModelAgent`'s `mcpServers`). */
  mcpServers: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/), AgentFileMcpServerSchema).optional(),
});
/** An agent file (inferred from `AgentFileSchema`). */
export type AgentFile = z.infer<typeof AgentFileSchema>;

/** An agent file that cannot be read or whose provider cannot be loaded: what is wrong and what to do. */
export class AgentFileError extends Error {
  override readonly name = 'AgentFileError';
}

function isPath(spec: string): boolean {
  return spec.startsWith('.') || spec.startsWith('/') || /^[A-Za-z]:[\\/]/.test(spec);
}

async function importProvider(spec: string, fileDir: string): Promise<Record<string, unknown>> {
  let url: string;
  if (isPath(spec)) url = pathToFileURL(resolve(fileDir, spec)).href;
  else {
    try {
      url = pathToFileURL(createRequire(resolve('package.json')).resolve(spec)).href;
    } catch {
      throw new AgentFileError(
        `the provider package ${spec} is not installed: install it with \`npm install ${spec}\` (and \`npm install ai\`)`,
      );
    }
  }
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new AgentFileError(`cannot load the provider ${spec}: ${(error as Error).message}`);
  }
}

/** The model of an agent file: the provider's export called with the model id (or its `languageModel(id)`). */
export async function agentModel(file: AgentFile, fileDir: string): Promise<AgentLanguageModel> {
  const mod = await importProvider(file.provider, fileDir);
  const guess =
    file.provider
      .split('/')
      .at(-1)
      ?.replace(/\.[cm]?js$/, '') ?? '';
  const name = file.export ?? (guess in mod ? guess : 'default');
  const provider = mod[name] as unknown;
  let model: unknown;
  if (typeof provider === 'function') model = (provider as (id: string) => unknown)(file.model);
  else if (typeof (provider as { languageModel?: unknown })?.languageModel === 'function') {
    model = (provider as { languageModel: (id: string) => unknown }).languageModel(file.model);
  } else {
    throw new AgentFileError(
      `the provider ${file.provider} exports no provider named ${name}: set "export" in the agent file to the provider's export (say "openai")`,
    );
  }
  const m = model as Partial<AgentLanguageModel> | undefined;
  if (typeof m?.modelId !== 'string' || typeof m.provider !== 'string') {
    throw new AgentFileError(`${file.provider}'s ${name}("${file.model}") is not a language model`);
  }
  return m as AgentLanguageModel;
}

/** A file's `env` or `headers`, each `{ fromEnv }` read from the environment: a variable not set is refused. */
function secretValues(
  values: Record<string, string | { fromEnv: string }> | undefined,
  where: string,
  env: NodeJS.ProcessEnv,
): Record<string, string> | undefined {
  if (values === undefined) return undefined;
  const resolved: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) {
    if (typeof value === 'string') resolved[key] = value;
    else {
      const read = env[value.fromEnv];
      if (read === undefined) {
        throw new AgentFileError(
          `${where}.${key} is read from the environment variable ${value.fromEnv}, which is not set: set it for the worker`,
        );
      }
      resolved[key] = read;
    }
  }
  return resolved;
}

/** The MCP servers of an agent file as `createModelAgent` takes them: values read from the environment, paths from the file's folder. */
export function agentFileMcpServers(
  file: AgentFile,
  fileDir: string,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, McpServerConfig> | undefined {
  if (file.mcpServers === undefined) return undefined;
  const servers: Record<string, McpServerConfig> = {};
  for (const [name, server] of Object.entries(file.mcpServers)) {
    const where = `mcpServers.${name}`;
    if ('command' in server) {
      const serverEnv = secretValues(server.env, `${where}.env`, env);
      servers[name] = {
        command: server.command,
        ...(server.args === undefined ? {} : { args: server.args }),
        ...(serverEnv === undefined ? {} : { env: serverEnv }),
        ...(server.cwd === undefined ? {} : { cwd: resolve(fileDir, server.cwd) }),
      };
    } else {
      const headers = secretValues(server.headers, `${where}.headers`, env);
      servers[name] = { url: server.url, ...(headers === undefined ? {} : { headers }) };
    }
  }
  return servers;
}

/** Reads an agent file and makes its handler (`createModelAgent`); the AI SDK is checked to be installed. */
export async function loadAgentFile(path: string): Promise<{ handler: ModelAgent; file: AgentFile }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new AgentFileError(`cannot read the agent file ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new AgentFileError(`the agent file ${path} is not JSON: ${(error as Error).message}`);
  }
  const parsed = AgentFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AgentFileError(
      `the agent file ${path}: ${issue?.path.join('.') || '(top)'}: ${issue?.message} (it holds { provider, model, system?, pricing?, maxSteps?, budget?, ask?, delegate?, mcpServers? })`,
    );
  }
  try {
    await import('ai');
  } catch {
    throw new AgentFileError('model agents need the Vercel AI SDK: install it with `npm install ai`');
  }
  const file = parsed.data;
  const fileDir = dirname(resolve(path));
  const model = await agentModel(file, fileDir);
  let mcpServers: Record<string, McpServerConfig> | undefined;
  try {
    mcpServers = agentFileMcpServers(file, fileDir);
  } catch (error) {
    throw new AgentFileError(`the agent file ${path}: ${(error as Error).message}`);
  }
  const handler = createModelAgent({
    model,
    ...(file.system === undefined ? {} : { system: file.system }),
    ...(file.pricing === undefined ? {} : { pricing: file.pricing }),
    ...(file.maxSteps === undefined ? {} : { maxSteps: file.maxSteps }),
    ...(file.budget === undefined ? {} : { budget: file.budget }),
    ...(file.ask === undefined ? {} : { ask: file.ask }),
    ...(file.delegate === undefined ? {} : { delegate: file.delegate }),
    ...(mcpServers === undefined ? {} : { mcpServers }),
  });
  return { handler, file };
}
