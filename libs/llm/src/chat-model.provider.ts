import { Logger, type Provider } from '@nestjs/common';
import { Metrics, QunliConfig } from '@app/platform';
import { ChatModel } from './chat-model.js';
import { MeteredChatModel } from './metered-chat-model.js';
import { OfflineResponder } from './offline-responder.js';
import { OpenAiChatClient } from './openai-chat.client.js';

/**
 * The OpenAI-compatible client when `OPENAI_API_KEY` is set, else the labelled offline responder; either way
 * counted in the LLM metrics (`qunli_llm_calls_total`, `qunli_llm_tokens_total`).
 */
export const chatModelProvider: Provider = {
  provide: ChatModel,
  inject: [QunliConfig, Metrics],
  useFactory: (config: QunliConfig, metrics: Metrics): ChatModel => {
    const logger = new Logger('ChatModel');
    if (config.llmOffline) {
      logger.warn('OPENAI_API_KEY is not set: replies come from the offline responder, labelled （离线模式）');
      return new MeteredChatModel(new OfflineResponder(), metrics);
    }
    logger.log(
      `LLM: ${config.OPENAI_BASE_URL ?? 'https://api.openai.com/v1'} (planner ${config.QUNLI_MODEL_PLANNER}, ` +
        `replyer ${config.QUNLI_MODEL_REPLYER}, utils ${config.QUNLI_MODEL_UTILS})`,
    );
    return new MeteredChatModel(new OpenAiChatClient(config), metrics);
  },
};
