import { JargonLearner } from './jargon-learner.service.js';
import { MemoryQueues } from './memory-queues.js';
import { MessageMemoryConsumer } from './message-memory.consumer.js';
import { MemoryMaintenanceProcessor, ThreadSummaryProcessor } from './memory.processors.js';
import { ThreadSummarizer } from './thread-summarizer.service.js';

/*
 * The memory workers, run by life-director (ADR-0014): the `memory` consumer group (connected in main.ts with
 * `connectStreamConsumer(app, ConsumerGroup.Memory)`), summary and maintenance workers. Listed here and declared
 * by LifeDirectorModule, which owns the app's one BullMQ connection (QueuesModule.forRoot once per app).
 */
export const MEMORY_WORKER_CONTROLLERS = [MessageMemoryConsumer];
export const MEMORY_WORKER_PROVIDERS = [
  MemoryQueues,
  ThreadSummarizer,
  JargonLearner,
  ThreadSummaryProcessor,
  MemoryMaintenanceProcessor,
];
