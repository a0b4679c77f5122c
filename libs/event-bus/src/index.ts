export * from './consumer-types.js';
export * from './event-bus.module.js';
export * from './event-log.js';
export * from './stream-consumers.js';
export * from './stream-context.js';
