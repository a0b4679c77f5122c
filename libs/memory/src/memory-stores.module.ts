import { Module } from '@nestjs/common';
import { MemoryBudget } from './budget/memory-budget.store.js';
import { MemoryErasure } from './erasure/memory-erasure.service.js';
import { RedisScrubber } from './erasure/redis-scrubber.store.js';
import { MemoryRetrieval } from './retrieval/memory-retrieval.service.js';
import { AgendaRepository } from './stores/agenda.repository.js';
import { FactsRepository } from './stores/facts.repository.js';
import { JargonRepository } from './stores/jargon.repository.js';
import { MemoryMessagesRepository } from './stores/memory-messages.repository.js';
import { PeopleRepository } from './stores/people.repository.js';
import { SummariesRepository } from './stores/summaries.repository.js';
import { ThreadBufferStore } from './stores/thread-buffer.store.js';

const PROVIDERS = [
  AgendaRepository,
  FactsRepository,
  JargonRepository,
  MemoryMessagesRepository,
  PeopleRepository,
  SummariesRepository,
  ThreadBufferStore,
  MemoryBudget,
  MemoryRetrieval,
  RedisScrubber,
  MemoryErasure,
];

/**
 * Memory's stores (Postgres read models, Redis buffers and budget) and retrieval. Needs the global
 * `PlatformModule`, `PersistenceModule` and `EventBusModule` (for `Keyspace`).
 */
@Module({ providers: PROVIDERS, exports: PROVIDERS })
export class MemoryStoresModule {}
