// The worker process of bench:coordinator:postgres runs this handler for every role: each hop completes at
// once with the usage the in-process pools report (bench/four-stage-workflow.ts, NOOP_USAGE).
import { complete } from '../dist/index.js';

export default () => complete({ usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.0001, model: 'noop' } });
