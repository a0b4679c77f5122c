import { Injectable, Logger } from '@nestjs/common';
import { ChatModel } from '@app/llm';
import { QunliConfig } from '@app/platform';

/** A polish that grew the text beyond this factor is not a polish; the original goes out. */
const MAX_GROWTH = 2;

const SYSTEM_PROMPT = [
  '你在帮一个 QQ 群成员润色他马上要发出的一条消息。',
  '让它读起来更自然、更口语，像真人在群里打字；意思、语气和事实都不要变，不要添加新内容，不要加称呼或表情包说明。',
  '只输出润色后的消息本身，不要解释，不要加引号。',
].join('\n');

/**
 * The reply path's optional polish (oh-mai-agent `PolishService`): one utils-model call per reply, done once
 * (the result is kept in the send plan), and any failure — no key, an error, an empty or runaway answer — sends
 * the original text.
 */
@Injectable()
export class ReplyPolisher {
  private readonly logger = new Logger('ReplyPolisher');
  private readonly enabled: boolean;

  constructor(
    private readonly chat: ChatModel,
    private readonly config: QunliConfig,
  ) {
    this.enabled = config.QUNLI_SEND_POLISH === 'on' && chat.kind !== 'offline';
  }

  async polish(text: string): Promise<{ text: string; polished: boolean }> {
    if (!this.enabled) return { text, polished: false };
    const signal = AbortSignal.timeout(this.config.QUNLI_LLM_TIMEOUT_MS);
    try {
      const response = await this.chat.complete({
        role: 'utils',
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          { role: 'user', content: text },
        ],
        tools: [],
        toolChoice: 'auto',
        signal,
        subjectText: text,
      });
      const polished = (response.content ?? '').trim();
      if (polished.length === 0 || polished.length > text.length * MAX_GROWTH + 20) {
        this.logger.warn({ message: 'polish answer unusable; sending the original', length: polished.length });
        return { text, polished: false };
      }
      return { text: polished, polished: true };
    } catch (error) {
      this.logger.warn({ message: 'polish failed; sending the original', error: (error as Error).message });
      return { text, polished: false };
    }
  }
}
