export * from './chat-model.js';
export * from './chat-model.provider.js';
export * from './offline-responder.js';
export * from './openai-chat.client.js';
