export * from './api-outcome.rules.js';
export * from './cq-code.js';
export * from './fake-onebot.js';
export * from './http-body.js';
export * from './napcat-events.js';
export * from './onebot-http-api.client.js';
export * from './onebot-types.js';
export * from './signature.js';
