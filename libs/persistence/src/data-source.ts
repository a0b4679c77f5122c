import type { DataSourceOptions } from 'typeorm';
import { EventLogEntry } from './entities/event-log-entry.entity.js';
import { EventStateRecord } from './entities/event-state-record.entity.js';
import { EventTransitionRecord } from './entities/event-transition-record.entity.js';
import { EpisodeRecord } from './entities/episode-record.entity.js';
import { EpisodeStepRecord } from './entities/episode-step-record.entity.js';
import { MessageRecord } from './entities/message-record.entity.js';
import { NoticeRecord } from './entities/notice-record.entity.js';
import { RequestRecord } from './entities/request-record.entity.js';
import { ProjectionCheckpoint } from './entities/projection-checkpoint.entity.js';
import { SendRecord } from './entities/send-record.entity.js';
import { TimerRecord } from './entities/timer-record.entity.js';
import { GroupActorRecord, ThreadRecord } from './entities/attention-records.entity.js';
import { EpisodeControlRecord } from './entities/episode-control-record.entity.js';
import { EventLogAndReadModels1796035390403 } from './migrations/1796035390403-event-log-and-read-models.js';
import { CognitionAccounting1796200000000 } from './migrations/1796200000000-cognition-accounting.js';
import { LlmCallRecord } from './entities/llm-call-record.entity.js';
import { PersonaRecord } from './entities/persona-record.entity.js';
import { SchedulerTimersAndControls1796210000000 } from './migrations/1796210000000-scheduler-timers-and-controls.js';
import { ThreadsAndActors1796300000000 } from './migrations/1796300000000-threads-and-actors.js';
import { KeywordLexicon1796310000000 } from './migrations/1796310000000-keyword-lexicon.js';
import { LighterEventLog1796400000000 } from './migrations/1796400000000-lighter-event-log.js';
import { MemoryMessageVectors1796500000000 } from './migrations/1796500000000-memory-message-vectors.js';
import { MemoryPresenceIndex1796500000001 } from './migrations/1796500000001-memory-presence-index.js';
import { IndexesNothingReads1796600000000 } from './migrations/1796600000000-indexes-nothing-reads.js';
import { KeywordHitRecord, KeywordSetRecord, KeywordTermRecord } from './entities/keyword-records.entity.js';
import { OneBotEdgeProjections1796100000005 } from './migrations/1796100000005-onebot-edge-projections.js';
import type { ReadModel } from './projection/projection.rules.js';
import { ActivityRecord, AgendaMilestoneRecord, AgendaRecord, BeatRecord } from './entities/life-records.entity.js';
import { FactRecord, JargonRecord, MemoryMessageRecord, SummaryRecord } from './entities/memory-records.entity.js';
import { AgendaAndMemory1796035391409 } from './migrations/1796035391409-agenda-and-memory.js';

export type PostgresOptions = Extract<DataSourceOptions, { type: 'postgres' }>;

/** The entity class behind each read model the projector writes and replay rebuilds. */
export const READ_MODEL_ENTITIES = {
  messages: MessageRecord,
  events: EventStateRecord,
  eventTransitions: EventTransitionRecord,
  episodes: EpisodeRecord,
  episodeSteps: EpisodeStepRecord,
  sends: SendRecord,
  agenda: AgendaRecord,
  activities: ActivityRecord,
  beats: BeatRecord,
  agendaMilestones: AgendaMilestoneRecord,
  memoryMessages: MemoryMessageRecord,
  summaries: SummaryRecord,
  facts: FactRecord,
  jargon: JargonRecord,
  llmCalls: LlmCallRecord,
  personas: PersonaRecord,
  timers: TimerRecord,
  episodeControls: EpisodeControlRecord,
  notices: NoticeRecord,
  requests: RequestRecord,
  threads: ThreadRecord,
  groupActors: GroupActorRecord,
  keywordSets: KeywordSetRecord,
  keywordTerms: KeywordTermRecord,
  keywordHits: KeywordHitRecord,
} as const satisfies Record<ReadModel, new () => object>;

export const ENTITIES = [EventLogEntry, ...Object.values(READ_MODEL_ENTITIES), ProjectionCheckpoint];

/** Every migration, oldest first. Hand-written SQL; a new one is appended here. */
export const MIGRATIONS = [
  EventLogAndReadModels1796035390403,
  AgendaAndMemory1796035391409,
  OneBotEdgeProjections1796100000005,
  CognitionAccounting1796200000000,
  SchedulerTimersAndControls1796210000000,
  ThreadsAndActors1796300000000,
  KeywordLexicon1796310000000,
  LighterEventLog1796400000000,
  MemoryMessageVectors1796500000000,
  MemoryPresenceIndex1796500000001,
  IndexesNothingReads1796600000000,
];

export const MIGRATIONS_TABLE = 'typeorm_migrations';

/**
 * How long a pooled connection above the kept ones may idle before it is closed. pg's default, 10 s, is shorter
 * than the silence between two @s of a quiet group: every @ would open its connections again (ADR 0039).
 */
export const POOL_IDLE_MS = 10 * 60_000;

/**
 * pg pool settings beyond TypeORM's: `keepOpen` connections are never closed for idling (`openDataSource` opens
 * them at start), the rest after `POOL_IDLE_MS`; TCP keep-alive so that a NAT or firewall between the app and
 * Postgres does not silently drop a connection kept idle.
 */
export function poolExtras(keepOpen: number): Record<string, unknown> {
  return { min: keepOpen, idleTimeoutMillis: POOL_IDLE_MS, keepAlive: true };
}

/**
 * TypeORM options for qunli's Postgres. Entities and migrations are listed, never globbed, so the build output and
 * the sources behave the same. The schema only ever changes through migrations (`npm run migrate`).
 */
export function dataSourceOptions(databaseUrl: string, overrides: Partial<PostgresOptions> = {}): PostgresOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: MIGRATIONS_TABLE,
    migrationsTransactionMode: 'each',
    poolSize: 5,
    connectTimeoutMS: 5000,
    logging: false,
    extra: poolExtras(0),
    ...overrides,
    synchronize: false,
    migrationsRun: false,
  };
}
