export * from './bootstrap.js';
export * from './clock.js';
export * from './config.js';
export * from './logger.js';
export * from './metrics.js';
export * from './platform.module.js';
export * from './redis.js';
export * from './tokens.js';
