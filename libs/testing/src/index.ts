export * from './config.js';
export * from './database.js';
export * from './llm-double.js';
export * from './processes.js';
export * from './redis.js';
