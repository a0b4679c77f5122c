import { IsString, MaxLength, MinLength } from 'class-validator';
import type { MessageSegment, Tool, ToolOutcome } from '@app/contracts';
import type { OneBotHttpApi } from '@app/onebot';
import { validateArgs } from '../../episodes/episode.machine.js';

class ViewComplexMessageArgs {
  @IsString()
  @MinLength(1)
  @MaxLength(32)
  msg_id!: string;
}

interface ForwardNode {
  sender?: { nickname?: string; card?: string; user_id?: number | string };
  time?: number;
  message?: unknown;
  content?: unknown;
  raw_message?: string;
}

/** Plain text of a OneBot message (array of segments or CQ string), as the prompt shows messages. */
export function renderOneBotMessage(message: unknown): string {
  if (typeof message === 'string') return message;
  if (!Array.isArray(message)) return '';
  return message
    .map((segment: { type?: string; data?: Record<string, unknown> }) => {
      const data = segment.data ?? {};
      switch (segment.type ?? '') {
        case 'text':
          return typeof data.text === 'string' ? data.text : '';
        case 'image':
          return '[图片]';
        case 'face':
          return '[表情]';
        case 'at':
          return `@${typeof data.name === 'string' ? data.name : typeof data.qq === 'string' || typeof data.qq === 'number' ? String(data.qq) : ''}`;
        case 'forward':
          return '[合并转发]';
        default:
          return `[${segment.type ?? '消息'}]`;
      }
    })
    .join('');
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
    validate: (args) => validateArgs(ViewComplexMessageArgs, (args ?? {}) as Record<string, unknown>),
    async execute(args, context): Promise<ToolOutcome> {
      const forwardId = forwardIdOf(await segmentsOf(context.episodeId, context.groupId, args.msg_id));
      if (!forwardId) {
        return {
          ok: false,
          text: `消息 ${args.msg_id} 不是这里的合并转发消息。`,
          error: { code: 'TOOL.NOT_FORWARD', message: `message ${args.msg_id} has no forward segment here` },
        };
      }
      const outcome = await onebot.call<{ messages?: ForwardNode[] }>('get_forward_msg', {
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
      const nodes = outcome.data?.messages ?? [];
      const lines = nodes.map((node) => {
        const who = node.sender?.card || node.sender?.nickname || String(node.sender?.user_id ?? '某人');
        const text = renderOneBotMessage(node.message ?? node.content) || node.raw_message || '';
        return `${who}：${text}`;
      });
      return {
        ok: true,
        text: lines.length > 0 ? `合并转发里有 ${lines.length} 条消息：\n${lines.join('\n')}` : '合并转发是空的。',
        data: { count: lines.length },
      };
    },
  };
}
