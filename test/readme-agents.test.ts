import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { SWITCHBOARD_BIN } from '../src/transport/serve-process.js';

// The README's "Use it from an MCP host" and "Use it from the AI SDK /
// OpenAI / Anthropic" blocks, run as written: only the SDK clients (which
// would call a real LLM) are replaced by scripted fakes, and the paths by
// temporary ones.
const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sb-readme-agents-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const readme = readFileSync(join(root, 'README.md'), 'utf8');

function section(heading: string): string {
  const start = readme.indexOf(`### ${heading}\n`);
  expect(start, heading).toBeGreaterThan(0);
  const end = readme.slice(start + 4).search(/\n##+ /);
  return readme.slice(start, end < 0 ? undefined : start + 4 + end);
}

function blocks(text: string, lang: string): string[] {
  return [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] ?? '');
}

/** Replaces `from` by `to`, failing when the block does not contain it (the README changed). */
function swap(script: string, from: string, to: string): string {
  expect(script, `the block contains ${from}`).toContain(from);
  return script.split(from).join(to);
}

const resolved = (specifier: string) => JSON.stringify(import.meta.resolve(specifier));

describe('README: Use it from an MCP host', () => {
  it('its mcpServers configuration starts servers that list the A2A tool (and find each other on one broker)', async () => {
    const [json] = blocks(section('Use it from an MCP host'), 'json');
    const config = JSON.parse(json ?? '') as { mcpServers: Record<string, { command: string; args: string[] }> };
    const db = join(dir, 'mcp.db');
    const clients: Record<string, Client> = {};
    try {
      for (const [name, server] of Object.entries(config.mcpServers)) {
        // npx names this package: a bare `npx switchboard` would fetch another one.
        expect([server.command, ...server.args.slice(0, 3)]).toEqual([
          'npx',
          '-y',
          '--package=a2a-switchboard',
          'switchboard',
        ]);
        const args = server.args.slice(3).map((a) => (a === '/home/me/agents.db' ? db : a));
        const client = new Client({ name: 'readme-host', version: '1.0.0' });
        await client.connect(
          new StdioClientTransport({ command: process.execPath, args: [SWITCHBOARD_BIN, ...args], stderr: 'ignore' }),
        );
        clients[name] = client;
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toEqual(['A2A']);
      }
      expect(Object.keys(clients)).toEqual(['lead', 'researcher']);
      const lead = clients.lead as Client;
      const found = await lead.callTool({ name: 'A2A', arguments: { action: 'discover' } });
      const text = (found.content as { text: string }[])[0]?.text ?? '';
      expect(JSON.parse(text)).toMatchObject({
        ok: true,
        agents: [{ name: 'researcher', description: 'finds facts' }],
      });
    } finally {
      for (const client of Object.values(clients)) await client.close();
    }
  });
});

describe('README: Use it from the AI SDK / OpenAI / Anthropic', () => {
  const [aiSdk, openai, anthropic] = blocks(section('Use it from the AI SDK / OpenAI / Anthropic'), 'ts');

  /** Runs one block with the package, the database and the SDK client swapped; returns its stdout. */
  async function runBlock(name: string, block: string | undefined, sdk: [string, string]): Promise<string> {
    expect(block, name).toBeDefined();
    let script = swap(block ?? '', "'a2a-switchboard'", JSON.stringify(join(root, 'src/index.ts')));
    script = swap(script, "'agents.db'", JSON.stringify(join(dir, `${name}.db`)));
    script = swap(script, sdk[0], sdk[1]);
    script = script.replace("from 'ai';", `from ${resolved('ai')};`);
    const file = join(dir, `${name}.mts`);
    writeFileSync(file, script);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: root });
    return stdout;
  }

  it('the AI SDK block: generateText calls A2A through the broker', async () => {
    const fake = join(dir, 'fake-ai-sdk-openai.mts');
    writeFileSync(
      fake,
      `import { MockLanguageModelV3 } from ${resolved('ai/test')};
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
export const openai = () => new MockLanguageModelV3({
  doGenerate: async ({ prompt, tools }) => {
    if (tools?.[0]?.name !== 'A2A' || tools[0].inputSchema.type !== 'object') throw new Error('A2A not offered');
    const result = prompt.filter((m) => m.role === 'tool').flatMap((m) => m.content).at(-1);
    const content = result
      ? [{ type: 'text', text: 'tool said: ' + JSON.stringify(result.output.value) }]
      : [{ type: 'tool-call', toolCallId: 'c1', toolName: 'A2A', input: JSON.stringify({ action: 'discover' }) }];
    return { content, finishReason: { unified: result ? 'stop' : 'tool-calls', raw: undefined }, usage, warnings: [] };
  },
});
`,
    );
    const stdout = await runBlock('ai-sdk', aiSdk, [
      "import { openai } from '@ai-sdk/openai';",
      `import { openai } from ${JSON.stringify(fake)};`,
    ]);
    expect(stdout).toContain('tool said: {"ok":false,"errorCode":"A2A_NO_PEERS"');
  });

  it('the OpenAI block: a strict-mode tool call with nulls is answered by a tool message', async () => {
    const fake = join(dir, 'fake-openai.mts');
    writeFileSync(
      fake,
      `const none = { to: null, taskId: null, text: null, data: null, outcome: null, artifact: null, timeoutSeconds: null, historyLength: null };
export default class OpenAI {
  chat = { completions: { create: async ({ messages, tools }) => {
    if (tools[0].function.strict !== true || tools[0].function.name !== 'A2A') throw new Error('A2A not offered strict');
    const tool = messages.filter((m) => m.role === 'tool').at(-1);
    if (tool) return { choices: [{ message: { role: 'assistant', content: 'tool said: ' + tool.content } }] };
    const call = { id: 'call_1', type: 'function', function: { name: 'A2A', arguments: JSON.stringify({ ...none, action: 'discover' }) } };
    return { choices: [{ message: { role: 'assistant', content: null, tool_calls: [call] } }] };
  } } };
}
`,
    );
    const stdout = await runBlock('openai', openai, [
      "import OpenAI from 'openai';",
      `import OpenAI from ${JSON.stringify(fake)};`,
    ]);
    expect(stdout).toContain('tool said: {"ok":false,"errorCode":"A2A_NO_PEERS"');
  });

  it('the Anthropic block: a tool_use block is answered by a tool_result with is_error', async () => {
    const fake = join(dir, 'fake-anthropic.mts');
    writeFileSync(
      fake,
      `export default class Anthropic {
  messages = { create: async ({ messages, tools }) => {
    if (tools[0].name !== 'A2A' || tools[0].input_schema.type !== 'object') throw new Error('A2A not offered');
    const results = messages.filter((m) => m.role === 'user' && Array.isArray(m.content)).flatMap((m) => m.content);
    const result = results.at(-1);
    if (result) {
      return { content: [{ type: 'text', text: 'tool said: ' + result.content + ' is_error=' + result.is_error }], stop_reason: 'end_turn' };
    }
    return { content: [{ type: 'tool_use', id: 'toolu_1', name: 'A2A', input: { action: 'discover' } }], stop_reason: 'tool_use' };
  } };
}
`,
    );
    const stdout = await runBlock('anthropic', anthropic, [
      "import Anthropic from '@anthropic-ai/sdk';",
      `import Anthropic from ${JSON.stringify(fake)};`,
    ]);
    expect(stdout).toContain('tool said: {"ok":false,"errorCode":"A2A_NO_PEERS"');
    expect(stdout).toContain('is_error=true');
  });
});
