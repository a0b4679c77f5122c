import { Module } from '@nestjs/common';
import { QueueName } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { chatModelProvider } from '@app/llm';
import { MemoryContextModule } from '@app/memory';
import { PersistenceModule } from '@app/persistence';
import { PersonaModule } from '@app/persona';
import { PlatformModule, QueuesModule } from '@app/platform';
import { EpisodeControlListener } from './episodes/episode-control.listener.js';
import { EpisodeProcessor } from './episodes/episode.processor.js';
import { EpisodeRunner } from './episodes/episode.runner.js';
import { EpisodeStateStore } from './episodes/episode-state.store.js';
import { EventLookupStore } from './episodes/event-lookup.store.js';
import { HookRegistry } from './hooks/hook.registry.js';
import { Planner } from './llm/planner.js';
import { Replyer } from './llm/replyer.js';
import { PersonaVersion } from './persona/persona-version.js';
import { PromptContextService } from './prompt/prompt-context.service.js';
import { McpToolSources } from './tools/mcp/mcp-tool-sources.js';
import { StickerSet } from './tools/sticker-set.js';
import { ToolConfirmations } from './tools/tool-confirmations.store.js';
import { ToolRegistry } from './tools/tool.registry.js';
import { ToolSources } from './tools/tool-sources.service.js';

/**
 * The slow plane (ADR §4.2): runs episodes from the `episodes` queue and records their steps and outcomes as
 * events. Other modules hand it tools (`TOOL_PROVIDERS`), prompt sections (`PROMPT_CONTEXT_PROVIDERS`) and hooks
 * (`EPISODE_HOOKS`), or register them at run time through the exported `ToolRegistry`, `PromptContextService`
 * and `HookRegistry`.
 */
@Module({
  imports: [
    PlatformModule.forApp('cognition'),
    // An episode's start reads its prompt sections at once (about ten queries): after a quiet spell each would
    // otherwise open its own connection first (ADR 0039).
    PersistenceModule.forRoot({ keepOpen: 'pool' }),
    EventBusModule.forRoot(),
    PersonaModule,
    QueuesModule.forRoot(QueueName.Episodes),
    // The life line, memory and jargon: their prompt sections and query tools (issue 9).
    MemoryContextModule,
  ],
  providers: [
    chatModelProvider,
    HookRegistry,
    Planner,
    Replyer,
    ToolRegistry,
    ToolConfirmations,
    StickerSet,
    ToolSources,
    McpToolSources,
    PromptContextService,
    PersonaVersion,
    EpisodeStateStore,
    EventLookupStore,
    EpisodeControlListener,
    EpisodeRunner,
    EpisodeProcessor,
  ],
  exports: [ToolRegistry, PromptContextService, HookRegistry],
})
export class CognitionModule {}
