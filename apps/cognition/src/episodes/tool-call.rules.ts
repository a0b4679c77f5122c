import { plainToInstance } from 'class-transformer';
import {
  IsBoolean,
  IsNotEmpty,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  MinLength,
  validateSync,
  type ValidationError,
} from 'class-validator';
import type { FieldError } from '@app/contracts';
import type { ToolCall, ToolSpec } from '@app/llm';

export const REPLY_MAX_CHARS = 2000;

export const ToolName = { Reply: 'reply', NoReply: 'no_reply' } as const;

/** The tools an episode offers the model. Descriptions are prompts, so they are in Chinese. */
export const EPISODE_TOOLS: ToolSpec[] = [
  {
    name: ToolName.Reply,
    description: '在当前聊天里发一条消息，回应当前消息。',
    parameters: {
      type: 'object',
      properties: {
        text: {
          type: 'string',
          minLength: 1,
          maxLength: REPLY_MAX_CHARS,
          description: '要发出去的原话，像群友一样口语、简短。',
        },
        quote: { type: 'boolean', description: '是否引用（回复）当前消息；需要说清回的是哪条时设为 true。' },
      },
      required: ['text'],
      additionalProperties: false,
    },
  },
  {
    name: ToolName.NoReply,
    description: '这次不说话。',
    parameters: {
      type: 'object',
      properties: { reason: { type: 'string', description: '为什么不说话，一句话。' } },
      required: ['reason'],
      additionalProperties: false,
    },
  },
];

export class ReplyArgs {
  @IsString()
  @MinLength(1)
  @MaxLength(REPLY_MAX_CHARS)
  @Matches(/\S/, { message: 'text must not be blank' })
  text!: string;

  @IsOptional()
  @IsBoolean()
  quote?: boolean;
}

export class NoReplyArgs {
  @IsString()
  @IsNotEmpty()
  @MaxLength(500)
  reason!: string;
}

/** Why a model's answer could not be used; the label of `qunli_episode_invalid_tool_calls_total`. */
export type InvalidToolCallReason = 'unknown_tool' | 'bad_json' | 'invalid_arguments' | 'no_tool_call';

export type ToolCallDecision =
  | {
      ok: true;
      kind: 'reply';
      text: string;
      quote: boolean;
      /** `content`: the model wrote plain text instead of calling `reply`, and the text was taken as the reply. */
      source: 'tool' | 'content';
      call: ToolCall | null;
    }
  | { ok: true; kind: 'no_reply'; reason: string; call: ToolCall }
  | {
      ok: false;
      reason: InvalidToolCallReason;
      /** For logs and the step's observation. */
      message: string;
      /** For the model, in Chinese: what to fix. */
      hint: string;
      fields: FieldError[];
      call: ToolCall | null;
    };

function flatten(errors: ValidationError[]): FieldError[] {
  return errors.flatMap((e) =>
    e.constraints ? [{ path: e.property, message: Object.values(e.constraints).join(', ') }] : [],
  );
}

/** The call's arguments as a JSON object, or why they are not one. An empty string counts as `{}`. */
export function parseArguments(
  call: ToolCall,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  const raw = call.arguments.trim() === '' ? '{}' : call.arguments;
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return { ok: false, error: 'arguments must be a JSON object' };
    }
    return { ok: true, value: value as Record<string, unknown> };
  } catch (error) {
    return { ok: false, error: `arguments are not valid JSON: ${(error as Error).message}` };
  }
}

function invalidArguments(call: ToolCall, fields: FieldError[]): ToolCallDecision {
  const named = fields.map((f) => f.path).join('、');
  return {
    ok: false,
    reason: 'invalid_arguments',
    message: `invalid ${call.name} arguments: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}`,
    hint: `${call.name} 的参数不对（${named}）`,
    fields,
    call,
  };
}

/**
 * Turn the model's answer into a decision, or name exactly what is wrong with it. The first tool call counts;
 * an answer with plain text and no tool call is taken as the reply text, since many models do that.
 */
export function decideToolCall(answer: { content: string | null; toolCalls: ToolCall[] }): ToolCallDecision {
  const call = answer.toolCalls[0];
  if (!call) {
    const text = answer.content?.trim() ?? '';
    if (text === '') {
      return {
        ok: false,
        reason: 'no_tool_call',
        message: 'the model answered with neither a tool call nor text',
        hint: '你没有调用任何工具',
        fields: [],
        call: null,
      };
    }
    const fields = flatten(validateSync(plainToInstance(ReplyArgs, { text })));
    if (fields.length > 0) {
      return {
        ok: false,
        reason: 'invalid_arguments',
        message: `plain-text answer unusable as a reply: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}`,
        hint: `你直接输出了文字而没有调用工具，而且内容不能作为回复（超过 ${REPLY_MAX_CHARS} 字）`,
        fields,
        call: null,
      };
    }
    return { ok: true, kind: 'reply', text, quote: false, source: 'content', call: null };
  }

  if (call.name !== ToolName.Reply && call.name !== ToolName.NoReply) {
    return {
      ok: false,
      reason: 'unknown_tool',
      message: `unknown tool ${JSON.stringify(call.name)}`,
      hint: `没有叫「${call.name}」的工具，只能用 reply 或 no_reply`,
      fields: [],
      call,
    };
  }

  const parsed = parseArguments(call);
  if (!parsed.ok) {
    return {
      ok: false,
      reason: 'bad_json',
      message: `${call.name}: ${parsed.error}`,
      hint: `${call.name} 的参数不是合法的 JSON 对象`,
      fields: [],
      call,
    };
  }

  if (call.name === ToolName.Reply) {
    const args = plainToInstance(ReplyArgs, parsed.value);
    const fields = flatten(validateSync(args));
    if (fields.length > 0) return invalidArguments(call, fields);
    return { ok: true, kind: 'reply', text: args.text.trim(), quote: args.quote === true, source: 'tool', call };
  }
  const args = plainToInstance(NoReplyArgs, parsed.value);
  const fields = flatten(validateSync(args));
  if (fields.length > 0) return invalidArguments(call, fields);
  return { ok: true, kind: 'no_reply', reason: args.reason, call };
}
