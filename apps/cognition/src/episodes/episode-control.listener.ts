import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  EpisodeControlPayload,
  EventKind,
  Keyspace,
  type EpisodeControlRecord,
  type EventEnvelope,
} from '@app/contracts';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { Metrics, REDIS } from '@app/platform';
import { EventLookupStore } from './event-lookup.store.js';

/** A running episode's ear: commands arrive here as they are published, in any order; the runner sorts them. */
export interface ControlInbox {
  readonly episodeId: string;
  /** Commands heard and not yet taken by the runner. */
  take(): EpisodeControlPayload[];
  /** Called as each command arrives (the runner aborts an LLM call on interrupt or stop). */
  onCommand?: (command: EpisodeControlPayload) => void;
  close(): void;
}

/**
 * Hears `episode.control` commands for the episodes this process runs: the scheduler publishes each on
 * `Keyspace.episodeControlChannel` in the commit that records it. Pub/sub can miss a command (a reconnect), so
 * the runner also reads the durable control record between steps and fills gaps from the log.
 */
@Injectable()
export class EpisodeControlListener implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(EpisodeControlListener.name);
  private readonly subscriber: Redis;
  private readonly inboxes = new Map<string, Set<Inbox>>();
  private readonly rejected;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly lookup: EventLookupStore,
    metrics: Metrics,
  ) {
    this.subscriber = redis.duplicate({ connectionName: 'qunli-cognition-control' });
    this.rejected = metrics.counter({
      name: 'qunli_episode_control_rejected_total',
      help: 'Episode control messages on the channel that were not valid commands',
    });
  }

  async onModuleInit(): Promise<void> {
    this.subscriber.on('message', (_channel: string, message: string) => this.hear(message));
    await this.subscriber.subscribe(this.keys.episodeControlChannel);
  }

  async onModuleDestroy(): Promise<void> {
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }

  open(episodeId: string): ControlInbox {
    const inbox = new Inbox(episodeId, () => this.inboxes.get(episodeId)?.delete(inbox));
    const set = this.inboxes.get(episodeId) ?? new Set();
    set.add(inbox);
    this.inboxes.set(episodeId, set);
    return inbox;
  }

  /** The durable control record the scheduler keeps for the episode. */
  async record(groupId: string | null, episodeId: string): Promise<EpisodeControlRecord | null> {
    return this.parse(await this.redis.get(this.keys.episodeControl(this.keys.partitionOf(groupId), episodeId)));
  }

  /** A control record as stored (read here, or by an episode commit); null when absent or unreadable. */
  parse(json: string | null): EpisodeControlRecord | null {
    if (json === null) return null;
    try {
      return JSON.parse(json) as EpisodeControlRecord;
    } catch {
      this.rejected.inc();
      return null;
    }
  }

  /** Commands with seq in (`afterSeq`, `upToSeq`] from the log (the ones pub/sub did not bring). */
  async fromLog(
    groupId: string | null,
    episodeId: string,
    afterSeq: number,
    upToSeq: number,
    sinceMs: number,
  ): Promise<EpisodeControlPayload[]> {
    const events = await this.lookup.since(
      groupId,
      sinceMs,
      (e: EventEnvelope) =>
        e.kind === EventKind.EpisodeControl &&
        (e.payload as EpisodeControlPayload).episodeId === episodeId &&
        (e.payload as EpisodeControlPayload).seq > afterSeq &&
        (e.payload as EpisodeControlPayload).seq <= upToSeq,
      upToSeq - afterSeq,
      episodeId,
    );
    return events.map((e) => e.payload as EpisodeControlPayload);
  }

  private hear(message: string): void {
    let command: EpisodeControlPayload;
    try {
      command = plainToInstance(EpisodeControlPayload, JSON.parse(message) as object);
    } catch {
      this.rejected.inc();
      return;
    }
    if (validateSync(command).length > 0) {
      this.rejected.inc();
      this.logger.warn(`ignored an invalid episode control message: ${message.slice(0, 200)}`);
      return;
    }
    for (const inbox of this.inboxes.get(command.episodeId) ?? []) inbox.push(command);
  }
}

class Inbox implements ControlInbox {
  private readonly queue: EpisodeControlPayload[] = [];
  onCommand?: (command: EpisodeControlPayload) => void;

  constructor(
    readonly episodeId: string,
    private readonly closer: () => void,
  ) {}

  push(command: EpisodeControlPayload): void {
    this.queue.push(command);
    this.onCommand?.(command);
  }

  take(): EpisodeControlPayload[] {
    return this.queue.splice(0, this.queue.length);
  }

  close(): void {
    this.closer();
  }
}
