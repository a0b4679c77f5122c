import { Module, type DynamicModule } from '@nestjs/common';
import { QueueName } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule, ProjectorModule } from '@app/persistence';
import { PlatformModule, QueuesModule } from '@app/platform';
import { PersonaModule, PersonaPolicy } from '@app/persona';
import { ScoredAttention } from './attention/scored-attention.policy.js';
import { Dispatcher } from './dispatch/dispatcher.service.js';
import { FairDispatchStore } from './dispatch/fair-dispatch.store.js';
import { EpisodeControlStore } from './episodes/episode-control.store.js';
import { EpisodeActedStore } from './episodes/episode-acted.store.js';
import { EpisodeJobStore } from './episodes/episode-job.store.js';
import { EpisodeQueue } from './episodes/episode.queue.js';
import { ATTENTION_POLICY } from './groups/attention.token.js';
import { GroupEventsConsumer } from './groups/group-events.consumer.js';
import { GroupRuntime } from './groups/group-runtime.service.js';
import { GroupStateStore } from './groups/group-state.store.js';
import { emptyKeywordLookup, KEYWORD_LOOKUP, type KeywordLookup } from './keywords/keyword-lookup.js';
import { TimerStore } from './timers/timer.store.js';
import { TimerWheel } from './timers/timer-wheel.js';
import { KeywordsModule } from './keywords/keywords.module.js';
import { ProjectorThread } from './projection/projector-thread.js';

export type ProjectorPlacement = 'thread' | 'inline';

/**
 * The fast plane: the decider of every group event (event state machine, debounce, preemption), durable timers,
 * the fair dispatcher and episode control. It also hosts the projector, which keeps Postgres current from the log
 * (one consumer group with its own checkpoints): on the main thread (`QUNLI_PROJECTOR=inline`, the default) or in a
 * worker thread of its own (`thread`, ADR-0025).
 */
@Module({
  imports: [
    PlatformModule.forApp('scheduler'),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    QueuesModule.forRoot(QueueName.Episodes),
    PersonaModule,
  ],
  controllers: [GroupEventsConsumer],
  providers: [
    {
      provide: ATTENTION_POLICY,
      inject: [PersonaPolicy, { token: KEYWORD_LOOKUP, optional: true }],
      // The keyword lexicon's module provides KEYWORD_LOOKUP; without it, attention scores with no keywords.
      useFactory: (persona: PersonaPolicy, keywords: KeywordLookup | undefined) =>
        new ScoredAttention(persona, keywords ?? emptyKeywordLookup),
    },
    GroupRuntime,
    GroupStateStore,
    TimerStore,
    TimerWheel,
    FairDispatchStore,
    Dispatcher,
    EpisodeQueue,
    EpisodeControlStore,
    EpisodeJobStore,
    EpisodeActedStore,
  ],
})
export class SchedulerModule {
  static forRoot(projector: ProjectorPlacement): DynamicModule {
    // The projector and the keyword lexicon's learning follow the whole log and decide nothing the scheduler waits
    // for: on the main thread, or together in the log thread.
    return projector === 'inline'
      ? { module: SchedulerModule, imports: [ProjectorModule, KeywordsModule.forRoot({ learn: true })] }
      : { module: SchedulerModule, imports: [KeywordsModule.forRoot({ learn: false })], providers: [ProjectorThread] };
  }
}
