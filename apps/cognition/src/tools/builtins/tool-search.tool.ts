import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { validateToolArgs, type Tool, type ToolContext, type ToolOutcome, type ToolPermission } from '@app/contracts';
import type { ToolRegistry } from '../tool.registry.js';

class ToolSearchArgs {
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

/** Rank for a sender role as `ToolContext` carries it (configured owners arrive as `owner`). */
export function permissionOf(role: ToolContext['senderRole']): ToolPermission {
  return role === 'owner' ? 'owner' : role === 'admin' ? 'admin' : 'member';
}

/**
 * Maisaka's deferred discovery: searches the tools that are not listed to the planner; the ones it finds are
 * listed from the next step on (the runner reads `data.discovered`).
 */
export function toolSearchTool(registry: ToolRegistry): Tool<ToolSearchArgs> {
  return {
    name: 'tool_search',
    description: '搜索可以用的其他工具（查资料、查天气、查记忆等）。找到的工具下一轮就能直接调用。',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: '想做的事，几个关键词' },
        limit: { type: 'integer', minimum: 1, maximum: 10 },
      },
      required: ['query'],
      additionalProperties: false,
    },
    visibility: 'core',
    permission: 'member',
    timeoutMs: 2000,
    sideEffect: false,
    idempotent: true,
    maxResultChars: 3000,
    maxRetries: 0,
    requiresConfirmation: false,
    source: 'builtin',
    validate: (args) => validateToolArgs(ToolSearchArgs, args ?? {}),
    async execute(args, context): Promise<ToolOutcome> {
      const found = registry.search(args.query, args.limit ?? 5, permissionOf(context.senderRole));
      if (found.length === 0)
        return { ok: true, text: `没有找到和「${args.query}」有关的工具。`, data: { discovered: [] } };
      return {
        ok: true,
        text: ['找到这些工具，下一轮可以直接调用：', ...found.map((t) => `- ${t.name}：${t.description}`)].join('\n'),
        data: { discovered: found.map((t) => t.name) },
      };
    },
  };
}
