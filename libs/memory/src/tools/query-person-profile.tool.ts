import { Injectable } from '@nestjs/common';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { validateToolArgs, type Tool, type ToolContext, type ToolOutcome } from '@app/contracts';
import { MemoryRetrieval } from '../retrieval/memory-retrieval.service.js';
import { PeopleRepository } from '../stores/people.repository.js';
import { MEMORY_TOOL_DEFAULTS } from './tool-args.js';

export class QueryPersonProfileArgs {
  @IsOptional()
  @Matches(/^[0-9]{1,20}$/, { message: 'must be a QQ number' })
  user_id?: string;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  name?: string;
}

/** `query_person_profile`: what this group's memory knows about one person (the sender when none is named). */
@Injectable()
export class QueryPersonProfileTool implements Tool<QueryPersonProfileArgs> {
  readonly name = 'query_person_profile';
  readonly description = '查这个群记住的关于某个群友的事（专业、喜好、关系、答应过的事）。不填就是查当前发消息的人。';
  readonly inputSchema = {
    type: 'object',
    properties: {
      user_id: { type: 'string', description: 'QQ号' },
      name: { type: 'string', description: '群名片或昵称' },
    },
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

  constructor(
    private readonly retrieval: MemoryRetrieval,
    private readonly people: PeopleRepository,
  ) {}

  validate(args: unknown): ReturnType<Tool<QueryPersonProfileArgs>['validate']> {
    return validateToolArgs(QueryPersonProfileArgs, args);
  }

  async execute(args: QueryPersonProfileArgs, context: ToolContext): Promise<ToolOutcome> {
    if (context.groupId === null) return { ok: true, text: '（这里没有群记忆）' };
    const person = args.user_id
      ? await this.people.byId(context.groupId, args.user_id)
      : args.name
        ? await this.people.byName(context.groupId, args.name)
        : await this.people.byId(context.groupId, context.senderId);
    if (!person) return { ok: true, text: '（这个群里没有这个人的记录）', data: { found: false } };
    const text = await this.retrieval.profile(context.groupId, person.userId, person.displayName);
    return {
      ok: true,
      text: text ?? `（对 ${person.displayName} 还没有记住什么）`,
      data: { found: text !== null, userId: person.userId },
    };
  }
}
