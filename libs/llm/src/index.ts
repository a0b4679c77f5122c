export * from './chat-model.js';
export * from './chat-model.provider.js';
export * from './llm-retry.rules.js';
export * from './metered-chat-model.js';
export * from './offline-responder.js';
export * from './openai-chat.client.js';
