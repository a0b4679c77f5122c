import { Injectable, Logger } from '@nestjs/common';
import {
  QunliError,
  type Tool,
  type ToolContext,
  type ToolOutcome,
  type ToolPermission,
  type ToolRegistrar,
} from '@app/contracts';
import { permits, searchScore, TOOL_NAME } from './tool-result.rules.js';

export interface ToolRun {
  outcome: ToolOutcome;
  attempts: number;
  latencyMs: number;
}

/**
 * Every tool the planner may use (ADR §12): builtins, MCP servers' tools, tools of other modules. Registration
 * returns the function that unregisters, so a source that goes away (an MCP server, a plugin) takes its tools
 * with it. Running a tool applies its timeout (also to a tool that ignores its abort signal) and its retry cap.
 */
@Injectable()
export class ToolRegistry implements ToolRegistrar {
  private readonly logger = new Logger(ToolRegistry.name);
  private readonly tools = new Map<string, Tool<never>>();

  register(tool: Tool<never>): () => void {
    if (!TOOL_NAME.test(tool.name)) {
      throw new QunliError('TOOL.INVALID_NAME', `tool name ${JSON.stringify(tool.name)} must match ${TOOL_NAME}`, {
        name: tool.name,
      });
    }
    if (this.tools.has(tool.name)) {
      throw new QunliError('TOOL.DUPLICATE', `tool ${tool.name} is already registered`, {
        name: tool.name,
        source: this.tools.get(tool.name)!.source,
      });
    }
    this.tools.set(tool.name, tool);
    this.logger.log(`tool ${tool.name} registered (${tool.source}, ${tool.visibility}, ${tool.permission})`);
    return () => {
      if (this.tools.get(tool.name) === tool) {
        this.tools.delete(tool.name);
        this.logger.log(`tool ${tool.name} unregistered (${tool.source})`);
      }
    };
  }

  /** Unregister every tool of a source (`mcp:<server>`). */
  unregisterSource(source: string): number {
    let removed = 0;
    for (const [name, tool] of this.tools) {
      if (tool.source === source) {
        this.tools.delete(name);
        removed++;
      }
    }
    return removed;
  }

  get(name: string): Tool<never> | undefined {
    return this.tools.get(name);
  }

  all(): Tool<never>[] {
    return [...this.tools.values()];
  }

  /** Tools listed to the planner: core ones and deferred ones already found, that `role` may use. */
  listed(role: ToolPermission, discovered: ReadonlySet<string>): Tool<never>[] {
    return this.all().filter((t) => permits(t.permission, role) && (t.visibility === 'core' || discovered.has(t.name)));
  }

  /** Deferred tools `role` may use that match `query`, best first. */
  search(query: string, limit: number, role: ToolPermission): Tool<never>[] {
    return this.all()
      .filter((t) => t.visibility === 'deferred' && permits(t.permission, role))
      .map((tool) => ({ tool, score: searchScore(query, tool.name, tool.description) }))
      .filter((s) => s.score > 0)
      .sort((a, b) => b.score - a.score || a.tool.name.localeCompare(b.tool.name))
      .slice(0, limit)
      .map((s) => s.tool);
  }

  /** Run a validated call: timeout per attempt, retries while the tool says the failure is retryable. */
  async run(
    tool: Tool<never>,
    args: unknown,
    context: Omit<ToolContext, 'signal'>,
    signal: AbortSignal,
  ): Promise<ToolRun> {
    const began = performance.now();
    let attempts = 0;
    for (;;) {
      attempts++;
      const outcome = await this.attempt(tool, args, context, signal);
      const retry = !outcome.ok && outcome.error?.retryable === true && attempts <= tool.maxRetries && !signal.aborted;
      if (!retry) return { outcome, attempts, latencyMs: performance.now() - began };
    }
  }

  private async attempt(
    tool: Tool<never>,
    args: unknown,
    context: Omit<ToolContext, 'signal'>,
    outer: AbortSignal,
  ): Promise<ToolOutcome> {
    const timeout = AbortSignal.timeout(tool.timeoutMs);
    const signal = AbortSignal.any([outer, timeout]);
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<ToolOutcome>((resolve) => {
      onAbort = () =>
        resolve(
          timeout.aborted && !outer.aborted
            ? {
                ok: false,
                text: `工具 ${tool.name} 超时了（${tool.timeoutMs} ms 没有结果）`,
                error: { code: 'TOOL.TIMEOUT', message: `no answer in ${tool.timeoutMs} ms` },
              }
            : { ok: false, text: `工具 ${tool.name} 被中止了`, error: { code: 'TOOL.ABORTED', message: 'aborted' } },
        );
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([
        tool.execute(args as never, { ...context, signal }).then(
          (outcome) => outcome,
          (error: unknown) => ({
            ok: false,
            text: `工具 ${tool.name} 出错了：${(error as Error).message}`,
            error: {
              code: error instanceof QunliError ? error.code : 'TOOL.FAILED',
              message: (error as Error).message,
              retryable: false,
            },
          }),
        ),
        aborted,
      ]);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }
}
