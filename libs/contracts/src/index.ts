export * from './envelope.js';
export * from './errors.js';
export * from './event-kinds.js';
export * from './event-state.js';
export * from './message.js';
export * from './payloads.js';
export * from './queues.js';
export * from './streams.js';
