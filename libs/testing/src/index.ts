export * from './config.js';
export * from './redis.js';
