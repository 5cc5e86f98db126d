/**
 * switchboard: the library entry. Everything a user embedding the runtime
 * needs is exported from here.
 */
export * from './protocol/index.js';
export * from './machines/task-transitions.js';
export * from './machines/task-machine.js';
export * from './machines/agent-machine.js';
export { VERSION } from './version.js';
export { createBroker, brokerClosedError } from './actors/broker.js';
export type { Broker, BrokerOptions, BrokerOpenReport } from './actors/broker.js';
export type { BrokerApi, BrokerMethod } from './actors/broker-api.js';
