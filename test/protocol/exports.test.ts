import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as bus from '../../src/entry/bus.js';
import * as coordinator from '../../src/entry/coordinator.js';
import * as machines from '../../src/entry/machines.js';
import * as protocolEntry from '../../src/entry/protocol.js';
import * as transport from '../../src/entry/transport.js';
import * as workflow from '../../src/entry/workflow.js';
import * as lib from '../../src/index.js';
import * as protocol from '../../src/protocol/index.js';

const root = new URL('../..', import.meta.url).pathname;

/** The values of the package root, sorted: a change here is a change of the public API. */
const ROOT_VALUES = [
  'A2A_MAX_FILE_BYTES',
  'A2A_MAX_TEXT_CHARS',
  'A2A_TOOL_DESCRIPTION',
  'AgentCardSchema',
  'ArtifactSchema',
  'AuditError',
  'BrokerError',
  'BrokerOwnershipError',
  'BusError',
  'ContextStoreError',
  'CoordinatorError',
  'CoordinatorLeaseError',
  'DEFAULT_PRICING',
  'DEV_SDLC_WORKFLOW_PATH',
  'DataPartSchema',
  'ERROR_CODES',
  'FilePartSchema',
  'ItemOutputSchema',
  'MCP_DEFAULT_MAX_WAIT_SECONDS',
  'McpServerError',
  'METHODS',
  'MessageSchema',
  'MessageSendSchema',
  'NonRetryableError',
  'PartSchema',
  'PostgresError',
  'PushConfigSchema',
  'RemoteAgentError',
  'SHIPPED_WORKFLOWS_DIR',
  'SWITCHBOARD_BIN',
  'SWITCHBOARD_ERROR_CODES',
  'SchemaVersionError',
  'ServeProcess',
  'SocketError',
  'SwitchboardError',
  'TaskArtifactUpdateEventSchema',
  'TaskSchema',
  'TaskStatusUpdateEventSchema',
  'TextPartSchema',
  'TransportError',
  'VERSION',
  'WorkEnvelopeSchema',
  'WorkerError',
  'WorkflowDefinitionSchema',
  'WorkflowError',
  'WorkflowRegistry',
  'a2aToolStrictJsonSchema',
  'addRemoteAgent',
  'budgetPolicy',
  'checkWorkflowDefinition',
  'complete',
  'connect',
  'connectInProcess',
  'createA2AMcpServer',
  'createA2ATool',
  'createBroker',
  'createCoordinator',
  'createModelAgent',
  'createPool',
  'createRedisContextStore',
  'createRedisQueue',
  'createSqliteContextStore',
  'createSqliteQueue',
  'createWorker',
  'delegate',
  'derivedKey',
  'fromJsonRpcError',
  'isBrokerError',
  'isSwitchboardError',
  'isTransportError',
  'listRemoteAgents',
  'loadWorkflowDirectory',
  'loadWorkflowFile',
  'maxHopsPolicy',
  'parseWorkflowDefinition',
  'parseWorkflowDefinitionJson',
  'removeRemoteAgent',
  'roleAllowListPolicy',
  'serveArguments',
  'spawn',
  'startRemoteBridge',
  'suspend',
  'toAISDKTool',
  'toAnthropicTool',
  'toJsonRpcError',
  'toOpenAITool',
];

/** Internals: exported by no entry point. */
const INTERNALS = [
  'LineSplitter',
  'isBlankLine',
  'planScale',
  'migrate',
  'AUDIT_MIGRATIONS',
  'CONTEXT_SCHEMA',
  'COORDINATOR_SCHEMA',
  'openDatabase',
  'checkRetentionMs',
  'checkPublish',
  'resolveRoleSettings',
  'RpcConnection',
  'EventRelay',
];

const ENTRIES: Record<string, object> = {
  '.': lib,
  './protocol': protocolEntry,
  './machines': machines,
  './bus': bus,
  './transport': transport,
  './workflow': workflow,
  './coordinator': coordinator,
};

describe('the package root', () => {
  it('exports exactly the curated values', () => {
    expect(Object.keys(lib).sort()).toEqual([...ROOT_VALUES].sort());
  });

  it('exports what an embedder starts from and the wire schemas', () => {
    for (const name of [
      'createBroker',
      'connect',
      'createA2ATool',
      'delegate',
      'createSqliteQueue',
      'createRedisQueue',
      'createSqliteContextStore',
      'createRedisContextStore',
      'createWorker',
      'createPool',
      'createCoordinator',
      'PartSchema',
      'TextPartSchema',
      'FilePartSchema',
      'DataPartSchema',
      'MessageSendSchema',
      'MessageSchema',
      'TaskSchema',
      'ArtifactSchema',
      'AgentCardSchema',
      'TaskStatusUpdateEventSchema',
      'TaskArtifactUpdateEventSchema',
      'PushConfigSchema',
      'WorkEnvelopeSchema',
      'WorkflowDefinitionSchema',
      'METHODS',
      'SwitchboardError',
      'toJsonRpcError',
      'A2A_MAX_TEXT_CHARS',
      'A2A_MAX_FILE_BYTES',
    ]) {
      expect(lib, name).toHaveProperty(name);
    }
  });

  it('documents every export on its declaration (types included)', () => {
    const program = ts.createProgram([join(root, 'src/index.ts')], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      noEmit: true,
      skipLibCheck: true,
    });
    const checker = program.getTypeChecker();
    const source = program.getSourceFile(join(root, 'src/index.ts'));
    const moduleSymbol = source && checker.getSymbolAtLocation(source);
    expect(moduleSymbol).toBeDefined();
    const exported = checker.getExportsOfModule(moduleSymbol as ts.Symbol);
    expect(exported.length).toBeGreaterThan(ROOT_VALUES.length);
    const undocumented = exported
      .filter((symbol) => {
        const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        return ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === '';
      })
      .map((symbol) => symbol.name)
      .sort();
    expect(undocumented).toEqual([]);
  });
});

describe('the subpath exports', () => {
  it('package.json maps each entry file under src/entry to a subpath with types, import and the ESM-only refusal for require', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; import: string; require: string } | string>;
    };
    const require = './dist/cjs-refusal.cjs';
    const files = readdirSync(join(root, 'src/entry'))
      .filter((name) => name.endsWith('.ts'))
      .map((name) => name.slice(0, -3))
      .sort();
    expect(files).toEqual(
      Object.keys(ENTRIES)
        .filter((key) => key !== '.')
        .map((key) => key.slice(2))
        .sort(),
    );
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js', require });
    for (const name of files) {
      expect(pkg.exports[`./${name}`], name).toEqual({
        types: `./dist/entry/${name}.d.ts`,
        import: `./dist/entry/${name}.js`,
        require,
      });
    }
  });

  it('a2a-switchboard/protocol holds every schema of src/protocol', async () => {
    for (const name of Object.keys(protocol)) {
      expect(protocolEntry, name).toHaveProperty(name);
    }
    for (const file of readdirSync(join(root, 'src/protocol')).filter((name) => name.endsWith('.ts'))) {
      const module = (await import(`../../src/protocol/${file.replace(/\.ts$/, '.js')}`)) as Record<string, unknown>;
      for (const name of Object.keys(module).filter((key) => key.endsWith('Schema'))) {
        expect(protocolEntry, `${file}: ${name}`).toHaveProperty(name);
      }
    }
  });

  it('a2a-switchboard/machines exports the machines and their transition tables as data', () => {
    expect(Array.isArray(machines.TASK_TRANSITIONS)).toBe(true);
    expect(machines.TASK_TRANSITIONS.length).toBeGreaterThan(20);
    expect(machines.WORKER_STATUS_TABLE.working.rejected).toBe(false);
    expect(machines.taskMachine.id).toBe('task');
    expect(machines.agentMachine.id).toBe('agent');
    expect(machines.AGENT_TRANSITIONS.length).toBe(2);
    expect(machines.DELIVERY_TRANSITIONS.length).toBeGreaterThan(0);
    expect(machines.POOL_TRANSITIONS.length).toBeGreaterThan(0);
    expect(machines.WORKFLOW_RUN_TRANSITIONS.length).toBeGreaterThan(0);
    expect(machines.workflowRunMachine.id).toBeTypeOf('string');
  });

  it('the advanced pieces are under their subpath, not at the root', () => {
    const placed: Array<[object, string]> = [
      [bus, 'createDispatcher'],
      [bus, 'replyDispatch'],
      [bus, 'SqliteQueue'],
      [bus, 'RedisKeys'],
      [transport, 'JsonRpcServer'],
      [transport, 'LineWriter'],
      [transport, 'BrokerSession'],
      [transport, 'BrokerSocketServer'],
      [workflow, 'AuditLog'],
      [workflow, 'runGovernance'],
      [coordinator, 'submitItems'],
      [coordinator, 'SqliteCoordinatorStore'],
      [coordinator, 'PostgresLease'],
      [coordinator, 'readLeaseStatus'],
    ];
    for (const [entry, name] of placed) {
      expect(entry, name).toHaveProperty(name);
      expect(lib, name).not.toHaveProperty(name);
    }
  });

  it('no entry point exports an internal', () => {
    for (const [entry, module] of Object.entries(ENTRIES)) {
      for (const name of INTERNALS) {
        expect(module, `${entry} exports ${name}`).not.toHaveProperty(name);
      }
    }
  });
});
