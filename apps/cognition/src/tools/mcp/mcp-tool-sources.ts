import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { QunliConfig } from '@app/platform';
import { ToolRegistry } from '../tool.registry.js';
import { McpServerConnection } from './mcp-server.connection.js';
import { parseMcpServers, type McpServerConfig } from './mcp-servers.config.js';

/** How often the servers file is checked for changes. */
const WATCH_INTERVAL_MS = 2000;

/**
 * The MCP servers of `QUNLI_MCP_SERVERS` as tool sources. The file is watched: a server added starts, a server
 * removed or changed is closed and its tools unregistered (a changed one then starts again). A file that stops
 * validating leaves the running servers as they are (and says why).
 */
@Injectable()
export class McpToolSources implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(McpToolSources.name);
  private readonly connections = new Map<string, { config: string; connection: McpServerConnection }>();

  constructor(
    private readonly registry: ToolRegistry,
    private readonly config: QunliConfig,
  ) {}

  onApplicationBootstrap(): void {
    const path = this.config.QUNLI_MCP_SERVERS;
    if (!path) return;
    this.reload(path);
    watchFile(path, { interval: WATCH_INTERVAL_MS, persistent: false }, () => this.reload(path));
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.config.QUNLI_MCP_SERVERS) unwatchFile(this.config.QUNLI_MCP_SERVERS);
    await Promise.all([...this.connections.values()].map(({ connection }) => connection.close()));
    this.connections.clear();
  }

  /** The live connection of a server (tests, the panel). */
  connection(name: string): McpServerConnection | undefined {
    return this.connections.get(name)?.connection;
  }

  reload(path: string): void {
    let servers: Map<string, McpServerConfig>;
    try {
      servers = parseMcpServers(readFileSync(path, 'utf8'), path);
    } catch (error) {
      this.logger.error(`MCP servers not (re)loaded: ${(error as Error).message}`);
      return;
    }
    for (const [name, { config, connection }] of this.connections) {
      const next = servers.get(name);
      if (!next || JSON.stringify(next) !== config) {
        this.connections.delete(name);
        void connection.close();
        this.logger.log(`MCP server ${name} ${next ? 'changed' : 'removed'}`);
      }
    }
    for (const [name, server] of servers) {
      if (this.connections.has(name)) continue;
      const connection = new McpServerConnection(name, server, this.registry, {
        timeoutMs: this.config.QUNLI_TOOL_TIMEOUT_MS,
        maxResultChars: this.config.QUNLI_TOOL_RESULT_MAX_CHARS,
      });
      this.connections.set(name, { config: JSON.stringify(server), connection });
      connection.start();
    }
  }
}
