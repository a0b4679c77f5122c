import { Injectable } from '@nestjs/common';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { validateToolArgs, type Tool, type ToolContext, type ToolOutcome } from '@app/contracts';
import { MemoryRetrieval } from '../retrieval/memory-retrieval.service.js';
import { MEMORY_TOOL_DEFAULTS } from './tool-args.js';

export class QueryMemoryArgs {
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  query!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10)
  limit?: number;
}

/** `query_memory`: search this group's memory — summaries, facts about people, what was said earlier. */
@Injectable()
export class QueryMemoryTool implements Tool<QueryMemoryArgs> {
  readonly name = 'query_memory';
  readonly description = '查这个群以前聊过的事、记住的关于群友的事实和话题摘要。query 写要找的内容（关键词或问题）。';
  readonly inputSchema = {
    type: 'object',
    properties: {
      query: { type: 'string', description: '要找的内容' },
      limit: { type: 'integer', minimum: 1, maximum: 10 },
    },
    required: ['query'],
    additionalProperties: false,
  };
  readonly visibility = 'core' as const;
  readonly permission = MEMORY_TOOL_DEFAULTS.permission;
  readonly timeoutMs = MEMORY_TOOL_DEFAULTS.timeoutMs;
  readonly sideEffect = MEMORY_TOOL_DEFAULTS.sideEffect;
  readonly idempotent = MEMORY_TOOL_DEFAULTS.idempotent;
  readonly maxResultChars = MEMORY_TOOL_DEFAULTS.maxResultChars;
  readonly maxRetries = MEMORY_TOOL_DEFAULTS.maxRetries;
  readonly requiresConfirmation = MEMORY_TOOL_DEFAULTS.requiresConfirmation;
  readonly source = MEMORY_TOOL_DEFAULTS.source;

  constructor(private readonly retrieval: MemoryRetrieval) {}

  validate(args: unknown): ReturnType<Tool<QueryMemoryArgs>['validate']> {
    return validateToolArgs(QueryMemoryArgs, args);
  }

  async execute(args: QueryMemoryArgs, context: ToolContext): Promise<ToolOutcome> {
    if (context.groupId === null) return { ok: true, text: '（这里没有可查的群记忆）' };
    const text = await this.retrieval.memory({
      groupId: context.groupId,
      text: args.query,
      now: context.now,
      skipRecent: 0,
      ...(args.limit !== undefined ? { limit: args.limit } : {}),
    });
    return { ok: true, text: text ?? '（没找到相关的记忆）', data: { found: text !== null } };
  }
}
