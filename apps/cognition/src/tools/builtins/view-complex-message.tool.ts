import { IsString, MaxLength, MinLength } from 'class-validator';
import { validateToolArgs, type MessageSegment, type Tool, type ToolOutcome } from '@app/contracts';
import { renderPlainText, type OneBotHttpApi, type OneBotMessage } from '@app/onebot';

class ViewComplexMessageArgs {
  @IsString()
  @MinLength(1)
  @MaxLength(32)
  msg_id!: string;
}

interface ForwardData {
  messages?: ForwardNode[];
  message?: { type?: string; data?: { user_id?: string | number; nickname?: string; content?: unknown } }[];
}

interface ForwardNode {
  sender?: { nickname?: string; card?: string; user_id?: number | string };
  time?: number;
  message?: unknown;
  content?: unknown;
  raw_message?: string;
}

/** The nodes of a `get_forward_msg` answer as `who：text` lines: NapCat's `messages`, or the spec's `message` nodes. */
export function forwardLines(data: ForwardData | undefined): string[] {
  const render = (m: unknown) => (typeof m === 'string' || Array.isArray(m) ? renderPlainText(m as OneBotMessage) : '');
  if (Array.isArray(data?.messages)) {
    return data.messages.map((node) => {
      const who = node.sender?.card || node.sender?.nickname || String(node.sender?.user_id ?? '某人');
      return `${who}：${render(node.message ?? node.content) || node.raw_message || ''}`;
    });
  }
  if (Array.isArray(data?.message)) {
    return data.message
      .filter((node) => node.type === 'node')
      .map((node) => `${node.data?.nickname ?? String(node.data?.user_id ?? '某人')}：${render(node.data?.content)}`);
  }
  return [];
}

/** Where a message's forwarded content lives: its `forward` segment's id. */
export function forwardIdOf(segments: readonly MessageSegment[] | undefined): string | undefined {
  return segments?.find((s) => s.type === 'forward')?.data.id;
}

/**
 * Opens a merged-forward message (合并转发) of the episode's own conversation through OneBot `get_forward_msg`.
 * Only messages the episode has seen can be opened, so a prompt cannot make it read another group's messages.
 */
export function viewComplexMessageTool(
  onebot: OneBotHttpApi,
  segmentsOf: (
    episodeId: string,
    groupId: string | null,
    messageId: string,
  ) => Promise<readonly MessageSegment[] | undefined>,
): Tool<ViewComplexMessageArgs> {
  return {
    name: 'view_complex_message',
    description: '查看一条合并转发消息（[合并转发]）里的完整内容。',
    inputSchema: {
      type: 'object',
      properties: { msg_id: { type: 'string', description: '那条消息的 [msg_id]' } },
      required: ['msg_id'],
      additionalProperties: false,
    },
    visibility: 'core',
    permission: 'member',
    timeoutMs: 10_000,
    sideEffect: false,
    idempotent: true,
    maxResultChars: 4000,
    maxRetries: 1,
    requiresConfirmation: false,
    source: 'builtin',
    validate: (args) => validateToolArgs(ViewComplexMessageArgs, args ?? {}),
    async execute(args, context): Promise<ToolOutcome> {
      const forwardId = forwardIdOf(await segmentsOf(context.episodeId, context.groupId, args.msg_id));
      if (!forwardId) {
        return {
          ok: false,
          text: `消息 ${args.msg_id} 不是这里的合并转发消息。`,
          error: { code: 'TOOL.NOT_FORWARD', message: `message ${args.msg_id} has no forward segment here` },
        };
      }
      const outcome = await onebot.call<ForwardData>('get_forward_msg', {
        id: forwardId,
        message_id: forwardId,
      });
      if (outcome.kind !== 'ok') {
        return {
          ok: false,
          text: '打不开这条合并转发消息。',
          error: {
            code: 'TOOL.ONEBOT',
            message: `get_forward_msg: ${outcome.kind}`,
            retryable: outcome.kind === 'unreachable',
          },
        };
      }
      const lines = forwardLines(outcome.data);
      return {
        ok: true,
        text: lines.length > 0 ? `合并转发里有 ${lines.length} 条消息：\n${lines.join('\n')}` : '合并转发是空的。',
        data: { count: lines.length },
      };
    },
  };
}
