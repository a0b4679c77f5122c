import { Logger, type Provider } from '@nestjs/common';
import { QunliConfig } from '@app/platform';
import { ChatModel } from './chat-model.js';
import { OfflineResponder } from './offline-responder.js';
import { OpenAiChatClient } from './openai-chat.client.js';

/** The OpenAI-compatible client when `OPENAI_API_KEY` is set, else the labelled offline responder. */
export const chatModelProvider: Provider = {
  provide: ChatModel,
  inject: [QunliConfig],
  useFactory: (config: QunliConfig): ChatModel => {
    const logger = new Logger('ChatModel');
    if (config.llmOffline) {
      logger.warn('OPENAI_API_KEY is not set: replies come from the offline responder, labelled （离线模式）');
      return new OfflineResponder();
    }
    logger.log(
      `LLM: ${config.OPENAI_BASE_URL ?? 'https://api.openai.com/v1'} (replyer model ${config.QUNLI_MODEL_REPLYER})`,
    );
    return new OpenAiChatClient(config);
  },
};
