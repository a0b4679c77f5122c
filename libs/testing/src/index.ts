export * from './config.js';
export * from './database.js';
export * from './llm-double.js';
export * from './messages.js';
export * from './processes.js';
export * from './recording-server.js';
export * from './redis.js';
export * from './mcp-test-server.js';
