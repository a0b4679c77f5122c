import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { eraseEvents, type ErasureCriteria, type ErasureReport } from '@app/persistence';
import { Metrics } from '@app/platform';
import { RedisScrubber, type ScrubReport } from './redis-scrubber.store.js';

export interface ForgetReport {
  events: number;
  postgres: ErasureReport['rows'];
  redis: ScrubReport;
}

/**
 * "Forget this person" and retention (ADR-0016). Redis first (so the projector cannot archive a hot entry after
 * the Postgres pass), then Postgres (erase + rebuild), then Redis again with the ids Postgres found, then a final
 * Postgres pass for anything a worker committed in between.
 */
@Injectable()
export class MemoryErasure {
  private readonly logger = new Logger(MemoryErasure.name);
  private readonly erased;

  constructor(
    private readonly dataSource: DataSource,
    private readonly scrubber: RedisScrubber,
    metrics: Metrics,
  ) {
    this.erased = metrics.counter({
      name: 'qunli_memory_erased_events_total',
      help: 'Events erased from the log and every read model, by reason (user: an operator forgot someone; retention)',
      labelNames: ['reason'],
    });
  }

  async forgetUser(userId: string): Promise<ForgetReport> {
    if (!/^[0-9]{1,20}$/.test(userId)) throw new RangeError(`not a QQ number: ${userId}`);
    return this.erase({ kind: 'user', userId }, [userId]);
  }

  /** Erase conversations (and the memory written from them) older than `before`. */
  async applyRetention(before: Date): Promise<ForgetReport> {
    return this.erase({ kind: 'before', before }, []);
  }

  private async erase(criteria: ErasureCriteria, quoted: string[]): Promise<ForgetReport> {
    const first = await this.scrubber.scrub({ quoted, anywhere: new Set() });
    const pass = await eraseEvents(this.dataSource, criteria);
    const ids = new Set(pass.events.map((e) => e.id));
    const second = await this.scrubber.scrub({ quoted, anywhere: ids });
    const last = await eraseEvents(this.dataSource, criteria);
    for (const e of last.events) ids.add(e.id);
    const redis: ScrubReport = {
      keysDeleted: first.keysDeleted + second.keysDeleted,
      elementsRemoved: first.elementsRemoved + second.elementsRemoved,
      streamEntriesDeleted: first.streamEntriesDeleted + second.streamEntriesDeleted,
      jobsBusy: second.jobsBusy,
    };
    this.erased.inc({ reason: criteria.kind === 'user' ? 'user' : 'retention' }, ids.size);
    this.logger.log(`erased ${ids.size} events (${criteria.kind}); redis: ${JSON.stringify(redis)}`);
    return { events: ids.size, postgres: { ...pass.rows, ...last.rows }, redis };
  }
}
