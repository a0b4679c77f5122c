/** DI token of the shared command connection to Redis (ioredis `Redis`). */
export const REDIS = Symbol('REDIS');
/** DI token of the app's name (`ingress`, `scheduler`, …). */
export const APP_NAME = Symbol('APP_NAME');
