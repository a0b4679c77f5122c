import { Logger } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ValidateFunction } from 'ajv';
import type { Tool, ToolOutcome } from '@app/contracts';
import { mcpToolName, type McpServerConfig } from './mcp-servers.config.js';

export interface McpDefaults {
  timeoutMs: number;
  maxResultChars: number;
}

export interface McpToolSink {
  register(tool: Tool<never>): () => void;
}

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 30_000;

interface McpContentPart {
  type: string;
  text?: string;
}

/** Text the model sees from an MCP tool result (text parts joined; other parts named). */
export function mcpResultText(content: McpContentPart[] | undefined): string {
  return (content ?? []).map((part) => (part.type === 'text' ? (part.text ?? '') : `[${part.type}]`)).join('\n');
}

/**
 * One configured MCP server: connects (stdio or streamable HTTP), registers its tools as registry tools
 * (deferred by default, with the server's permission, timeout and result cap; arguments validated against the
 * tool's JSON schema), re-lists them when the server says they changed, and when the connection drops takes them
 * out and reconnects with backoff. `close()` removes it for good.
 */
export class McpServerConnection {
  private readonly logger: Logger;
  private client: Client | null = null;
  private transport: Transport | null = null;
  private unregister: (() => void)[] = [];
  private closed = false;
  private attempts = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  /** Tool names currently registered (for tests and the log). */
  readonly registered = new Set<string>();

  constructor(
    readonly name: string,
    readonly config: McpServerConfig,
    private readonly sink: McpToolSink,
    private readonly defaults: McpDefaults,
  ) {
    this.logger = new Logger(`Mcp:${name}`);
  }

  get source(): string {
    return `mcp:${this.name}`;
  }

  /** The stdio server's process id while connected. */
  get pid(): number | null {
    return this.transport instanceof StdioClientTransport ? this.transport.pid : null;
  }

  start(): void {
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.dropTools();
    const client = this.client;
    this.client = null;
    await client?.close().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client({ name: 'qunli', version: '0.1.0' });
    const transport: Transport =
      this.config.transport === 'stdio'
        ? new StdioClientTransport({
            command: this.config.command!,
            args: this.config.args ?? [],
            env: { ...(process.env as Record<string, string>), ...(this.config.env ?? {}) },
            stderr: 'ignore',
          })
        : new StreamableHTTPClientTransport(new URL(this.config.url!), {
            requestInit: { headers: this.config.headers ?? {} },
          });
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = null;
      this.dropTools();
      if (!this.closed) {
        this.logger.warn(`connection to MCP server ${this.name} closed; reconnecting`);
        this.schedule();
      }
    };
    client.onerror = (error) => this.logger.warn(`MCP server ${this.name}: ${error.message}`);
    try {
      await client.connect(transport, { timeout: this.defaults.timeoutMs });
      this.client = client;
      this.transport = transport;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        void this.listTools(client);
      });
      await this.listTools(client);
      this.attempts = 0;
      this.logger.log(`MCP server ${this.name} connected: ${[...this.registered].join(', ') || 'no tools'}`);
    } catch (error) {
      this.logger.warn(`MCP server ${this.name} unavailable: ${(error as Error).message}`);
      await client.close().catch(() => undefined);
      if (this.client === client) this.client = null;
      this.dropTools();
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.closed || this.timer) return;
    this.attempts++;
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(this.attempts - 1, 10));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.connect();
    }, delay);
    this.timer.unref();
  }

  private dropTools(): void {
    for (const off of this.unregister.splice(0)) off();
    this.registered.clear();
  }

  private async listTools(client: Client): Promise<void> {
    const { tools } = await client.listTools(undefined, { timeout: this.defaults.timeoutMs });
    if (this.client !== client) return;
    this.dropTools();
    for (const spec of tools) {
      if (this.config.tools && !this.config.tools.includes(spec.name)) continue;
      const tool = this.toolFor(client, spec);
      try {
        this.unregister.push(this.sink.register(tool));
        this.registered.add(tool.name);
      } catch (error) {
        this.logger.warn(`MCP tool ${spec.name} of ${this.name} not registered: ${(error as Error).message}`);
      }
    }
  }

  private toolFor(
    client: Client,
    spec: { name: string; description?: string; inputSchema: Record<string, unknown> },
  ): Tool<never> {
    const timeoutMs = this.config.timeoutMs ?? this.defaults.timeoutMs;
    let validator: ValidateFunction | null = null;
    try {
      validator = this.ajv.compile(spec.inputSchema);
    } catch (error) {
      this.logger.warn(`MCP tool ${spec.name}: schema not usable (${(error as Error).message}); arguments unchecked`);
    }
    const tool: Tool<Record<string, unknown>> = {
      name: mcpToolName(this.name, spec.name),
      description: `${spec.description ?? spec.name}（来自 MCP 服务 ${this.name}）`,
      inputSchema: spec.inputSchema,
      visibility: this.config.visibility ?? 'deferred',
      permission: this.config.permission ?? 'member',
      timeoutMs,
      sideEffect: this.config.sideEffect ?? false,
      idempotent: !(this.config.sideEffect ?? false),
      maxResultChars: this.config.maxResultChars ?? this.defaults.maxResultChars,
      maxRetries: 0,
      requiresConfirmation: false,
      source: this.source,
      validate: (args) => {
        const value = (args ?? {}) as Record<string, unknown>;
        if (!validator || validator(value)) return { ok: true, value };
        return {
          ok: false,
          errors: (validator.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`),
        };
      },
      execute: async (args, context): Promise<ToolOutcome> => {
        const result = await client.callTool({ name: spec.name, arguments: args }, undefined, {
          signal: context.signal,
          timeout: timeoutMs,
        });
        const text = mcpResultText(result.content as McpContentPart[] | undefined);
        return result.isError
          ? { ok: false, text, error: { code: 'TOOL.MCP_ERROR', message: text.slice(0, 200) } }
          : { ok: true, text };
      },
    };
    return tool as unknown as Tool<never>;
  }
}
