import { Injectable } from '@nestjs/common';
import { IsString, MaxLength, MinLength } from 'class-validator';
import { validateToolArgs, type Tool, type ToolContext, type ToolOutcome } from '@app/contracts';
import { MemoryRetrieval } from '../retrieval/memory-retrieval.service.js';
import { MEMORY_TOOL_DEFAULTS } from './tool-args.js';

export class QueryJargonArgs {
  @IsString()
  @MinLength(1)
  @MaxLength(32)
  term!: string;
}

/** `query_jargon`: what a word means in this group (learned from how people here use it). */
@Injectable()
export class QueryJargonTool implements Tool<QueryJargonArgs> {
  readonly name = 'query_jargon';
  readonly description = '查某个词在这个群里是什么意思（群里的黑话、梗、外号）。';
  readonly inputSchema = {
    type: 'object',
    properties: { term: { type: 'string', description: '要查的词' } },
    required: ['term'],
    additionalProperties: false,
  };
  readonly visibility = 'deferred' as const;
  readonly permission = MEMORY_TOOL_DEFAULTS.permission;
  readonly timeoutMs = MEMORY_TOOL_DEFAULTS.timeoutMs;
  readonly sideEffect = MEMORY_TOOL_DEFAULTS.sideEffect;
  readonly idempotent = MEMORY_TOOL_DEFAULTS.idempotent;
  readonly maxResultChars = MEMORY_TOOL_DEFAULTS.maxResultChars;
  readonly maxRetries = MEMORY_TOOL_DEFAULTS.maxRetries;
  readonly requiresConfirmation = MEMORY_TOOL_DEFAULTS.requiresConfirmation;
  readonly source = MEMORY_TOOL_DEFAULTS.source;

  constructor(private readonly retrieval: MemoryRetrieval) {}

  validate(args: unknown): ReturnType<Tool<QueryJargonArgs>['validate']> {
    return validateToolArgs(QueryJargonArgs, args);
  }

  async execute(args: QueryJargonArgs, context: ToolContext): Promise<ToolOutcome> {
    if (context.groupId === null) return { ok: true, text: '（这里没有群黑话的记录）' };
    const text = await this.retrieval.jargonLookup(context.groupId, args.term.trim());
    return { ok: true, text: text ?? `（这个群还没学到「${args.term}」的意思）`, data: { found: text !== null } };
  }
}
