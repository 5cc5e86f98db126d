import { describe, expect, it } from 'vitest';
import * as lib from '../../src/index.js';
import * as protocol from '../../src/protocol/index.js';

describe('the library entry', () => {
  it('exports every protocol schema, bound and error helper', () => {
    for (const name of Object.keys(protocol)) {
      expect(lib, name).toHaveProperty(name);
    }
    for (const name of [
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
      'JsonRpcRequestSchema',
      'JsonRpcResponseSchema',
      'METHODS',
      'SwitchboardError',
      'toJsonRpcError',
      'A2A_MAX_TEXT_CHARS',
      'A2A_MAX_FILE_BYTES',
    ]) {
      expect(lib, name).toHaveProperty(name);
    }
  });

  it('exports the machines and their transition tables as data', () => {
    expect(Array.isArray(lib.TASK_TRANSITIONS)).toBe(true);
    expect(lib.TASK_TRANSITIONS.length).toBeGreaterThan(20);
    expect(lib.WORKER_STATUS_TABLE.working.rejected).toBe(false);
    expect(lib.taskMachine.id).toBe('task');
    expect(lib.agentMachine.id).toBe('agent');
    expect(lib.AGENT_TRANSITIONS.length).toBe(2);
  });
});
