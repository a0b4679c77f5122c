import { ChatModel, type ChatRequest, type ChatResponse, type LlmRole } from './chat-model.js';

export const OFFLINE_MODEL = 'offline';

const QUOTE_CHARS = 20;

/** Cut to `max` characters (code points, so an emoji is never split), with an ellipsis when cut. */
export function cutText(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const chars = [...flat];
  return chars.length <= max ? flat : `${chars.slice(0, max).join('')}…`;
}

/** What the bot says when it has no language model: clearly offline, and which message it got. */
export function offlineReplyText(subject: string | undefined): string {
  const quoted = subject && subject.trim() ? `「${cutText(subject, QUOTE_CHARS)}」` : '你的消息';
  return `（离线模式）收到${quoted}。我还没接上语言模型，配置 OPENAI_API_KEY 后就能正常聊天啦。`;
}

/**
 * The labelled stand-in used when `OPENAI_API_KEY` is not set, so the whole path can be tried without a key:
 * deterministic, no network. Asked with a `reply` tool (the planner), it calls `reply` on the subject message;
 * asked for text (the replyer, utils), it answers the offline text.
 */
export class OfflineResponder extends ChatModel {
  readonly kind = 'offline';
  private calls = 0;

  modelFor(_role: LlmRole): string {
    return OFFLINE_MODEL;
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    this.calls += 1;
    const usage = { promptTokens: 0, completionTokens: 0 };
    const reply = request.tools?.find((tool) => tool.name === 'reply');
    if (!reply || request.toolChoice === 'none') {
      return {
        content: offlineReplyText(request.subjectText),
        toolCalls: [],
        usage,
        model: OFFLINE_MODEL,
        attempts: 1,
      };
    }
    // The planner's reply names the message to answer; older callers' reply tools take the text itself.
    const properties = (reply.parameters.properties ?? {}) as Record<string, unknown>;
    const args =
      'msg_id' in properties
        ? { msg_id: request.subjectMessageId ?? '0' }
        : { text: offlineReplyText(request.subjectText) };
    return {
      content: null,
      toolCalls: [{ id: `offline_${this.calls}`, name: 'reply', arguments: JSON.stringify(args) }],
      usage,
      model: OFFLINE_MODEL,
      attempts: 1,
    };
  }
}
