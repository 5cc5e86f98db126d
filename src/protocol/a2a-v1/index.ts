export * from './schemas.js';
export * from './field-table.js';
export { V03_CARRY_KEY, V1_CARRY_KEY } from './carry.js';
export * from './message-mapping.js';
export * from './task-mapping.js';
export * from './list-tasks.js';
export * from './methods.js';
export * from './docs-tables.js';
