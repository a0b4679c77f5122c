import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { EPISODE_HOOKS, TOOL_PROVIDERS, type HookRegistration, type Tool } from '@app/contracts';
import { OneBotHttpApi } from '@app/onebot';
import { Metrics, QunliConfig } from '@app/platform';
import { HookRegistry } from '../hooks/hook.registry.js';
import { EpisodeStateStore } from '../episodes/episode-state.store.js';
import type { ChatLine } from '../episodes/episode-state.js';
import { toolSearchTool } from './builtins/tool-search.tool.js';
import { viewComplexMessageTool } from './builtins/view-complex-message.tool.js';
import { ToolRegistry } from './tool.registry.js';

/**
 * Fills the registry at start: the builtin tools, the tools other modules give through `TOOL_PROVIDERS`, and
 * the hooks given through `EPISODE_HOOKS`; takes them all out again at shutdown. (MCP servers register their
 * own tools as they connect; see `McpToolSources`.)
 */
@Injectable()
export class ToolSources implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ToolSources.name);
  private readonly unregister: (() => void)[] = [];
  private onebot: OneBotHttpApi | undefined;

  constructor(
    private readonly registry: ToolRegistry,
    private readonly hooks: HookRegistry,
    private readonly store: EpisodeStateStore,
    private readonly config: QunliConfig,
    private readonly metrics: Metrics,
    @Optional() @Inject(TOOL_PROVIDERS) private readonly provided?: Tool<never>[] | Tool<never>[][],
    @Optional() @Inject(EPISODE_HOOKS) private readonly providedHooks?: HookRegistration[] | HookRegistration[][],
  ) {}

  onApplicationBootstrap(): void {
    this.unregister.push(this.registry.register(toolSearchTool(this.registry) as unknown as Tool<never>));
    if (this.config.ONEBOT_HTTP_API_URL) {
      this.onebot = OneBotHttpApi.fromConfig(this.config, this.metrics);
      const tool = viewComplexMessageTool(this.onebot, async (episodeId, groupId, messageId) => {
        const loaded = await this.store.load(groupId, episodeId);
        return loaded?.state.history.find((e): e is ChatLine => e.kind === 'message' && e.messageId === messageId)
          ?.segments;
      });
      this.unregister.push(this.registry.register(tool as unknown as Tool<never>));
    } else {
      this.logger.log('ONEBOT_HTTP_API_URL is not set: view_complex_message is not available');
    }
    for (const tool of (this.provided ?? []).flat()) this.unregister.push(this.registry.register(tool));
    for (const hook of (this.providedHooks ?? []).flat()) this.unregister.push(this.hooks.register(hook));
  }

  async onApplicationShutdown(): Promise<void> {
    for (const off of this.unregister.splice(0)) off();
    await this.onebot?.close();
  }
}
