// A remote A2A v1.0 agent for the tests of src/remote: the official
// @a2a-js/sdk server (DefaultRequestHandler, InMemoryTaskStore, JSON-RPC
// and HTTP+JSON over express) on 127.0.0.1. argv: PORT (0 picks one) and
// "stream" or "poll" (its card's capabilities.streaming). Prints
// `{"port":N}` once listening. What its agent does depends on the text it
// is sent:
//   "ask"   -> input-required ("which colour?"); the answer X completes it
//              with the artifact "colour: X"
//   "wait"  -> working until canceled
//   "slow"  -> working, then the artifact and completed after 1.5 s
//   "slow N" -> the same after N ms
//   other X -> working ("on it"), the artifact "echo: X", completed ("done")
import express from 'express';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

const [portArg = '0', mode = 'stream'] = process.argv.slice(2);

function textPart(value) {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(taskId, contextId, text) {
  return {
    role: Role.ROLE_AGENT,
    messageId: crypto.randomUUID(),
    parts: [textPart(text)],
    taskId,
    contextId,
    extensions: [],
    metadata: {},
    referenceTaskIds: [],
  };
}

function status(taskId, contextId, state, text) {
  return AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: {
      state,
      timestamp: new Date().toISOString(),
      message: text === undefined ? undefined : agentMessage(taskId, contextId, text),
    },
    metadata: undefined,
  });
}

function artifact(taskId, contextId, text) {
  return AgentEvent.artifactUpdate({
    taskId,
    contextId,
    artifact: {
      artifactId: 'answer',
      name: 'answer',
      description: '',
      parts: [textPart(text)],
      metadata: undefined,
      extensions: [],
    },
    append: false,
    lastChunk: true,
    metadata: undefined,
  });
}

const waiting = new Map();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const worker = {
  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage } = requestContext;
    const first = userMessage.parts[0]?.content;
    const text = first?.$case === 'text' ? first.value : '';
    const followUp = requestContext.task !== undefined;
    eventBus.publish(
      AgentEvent.task(
        requestContext.task ?? {
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        },
      ),
    );
    if (followUp) {
      eventBus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING));
      eventBus.publish(artifact(taskId, contextId, `colour: ${text}`));
      eventBus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, 'done'));
      return;
    }
    if (text === 'ask') {
      eventBus.publish(status(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, 'which colour?'));
      return;
    }
    eventBus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING, 'on it'));
    if (text === 'wait') {
      await new Promise((resolve) => waiting.set(taskId, resolve));
      return;
    }
    if (text === 'slow') await sleep(1500);
    const slow = /^slow (\d+)$/.exec(text);
    if (slow !== null) await sleep(Number(slow[1]));
    await sleep(20);
    eventBus.publish(artifact(taskId, contextId, `echo: ${text}`));
    eventBus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, 'done'));
  },
  async cancelTask(taskId, eventBus) {
    const release = waiting.get(taskId);
    waiting.delete(taskId);
    eventBus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: { state: TaskState.TASK_STATE_CANCELED, timestamp: new Date().toISOString(), message: undefined },
        metadata: undefined,
      }),
    );
    release?.();
  },
};

async function main() {
  const app = express();
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(Number(portArg), '127.0.0.1', (error) => (error ? reject(error) : resolve(s)));
  });
  const port = server.address().port;
  const url = `http://127.0.0.1:${port}/`;
  const card = {
    name: mode === 'stream' ? 'sdk-streamer' : 'sdk-poller',
    description: `an agent of the official A2A SDK (${mode === 'stream' ? 'streams' : 'does not stream'})`,
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: mode === 'stream', pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'echo',
        name: 'echo',
        description: 'echoes what it is sent',
        tags: ['test'],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    documentationUrl: '',
    signatures: [],
  };
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), worker);
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
