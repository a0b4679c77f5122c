import { Module } from '@nestjs/common';
import { PROMPT_CONTEXT_PROVIDERS, TOOL_PROVIDERS, type PromptContextProvider, type Tool } from '@app/contracts';
import {
  ActivityContextProvider,
  JargonContextProvider,
  MemoryContextProvider,
  SenderContextProvider,
} from './context/memory-context.providers.js';
import { MemoryStoresModule } from './memory-stores.module.js';
import { QueryJargonTool } from './tools/query-jargon.tool.js';
import { QueryMemoryTool } from './tools/query-memory.tool.js';
import { QueryPersonProfileTool } from './tools/query-person-profile.tool.js';

/**
 * What cognition imports to read memory and the life line (ADR-0016): the tools `query_memory`,
 * `query_person_profile`, `query_jargon` under `TOOL_PROVIDERS`, and the prompt sections activity, memory, sender
 * and jargon under `PROMPT_CONTEXT_PROVIDERS`. Self-contained: needs only `PlatformModule`, `PersistenceModule`
 * and `EventBusModule`. The classes are exported too, for a cognition that gathers several modules' tools.
 */
@Module({
  imports: [MemoryStoresModule],
  providers: [
    QueryMemoryTool,
    QueryPersonProfileTool,
    QueryJargonTool,
    ActivityContextProvider,
    MemoryContextProvider,
    SenderContextProvider,
    JargonContextProvider,
    {
      provide: TOOL_PROVIDERS,
      inject: [QueryMemoryTool, QueryPersonProfileTool, QueryJargonTool],
      useFactory: (...tools: Tool<never>[]): Tool<never>[] => tools,
    },
    {
      provide: PROMPT_CONTEXT_PROVIDERS,
      inject: [ActivityContextProvider, MemoryContextProvider, SenderContextProvider, JargonContextProvider],
      useFactory: (...providers: PromptContextProvider[]): PromptContextProvider[] => providers,
    },
  ],
  exports: [
    TOOL_PROVIDERS,
    PROMPT_CONTEXT_PROVIDERS,
    QueryMemoryTool,
    QueryPersonProfileTool,
    QueryJargonTool,
    ActivityContextProvider,
    MemoryContextProvider,
    SenderContextProvider,
    JargonContextProvider,
  ],
})
export class MemoryContextModule {}
