import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { ConsumerGroup, Keyspace } from '@app/contracts';
import { Metrics, REDIS } from '@app/platform';
import { trimPoint, type GroupPosition } from './stream-trim.rules.js';

export const TRIM_INTERVAL_MS = 30_000;
/** Entries younger than this stay in Redis for readers even when archived and acknowledged everywhere. */
export const TRIM_RETENTION_MS = 10 * 60_000;

/** Field/value pairs as Redis returns them (`['name', 'projector', 'pending', 0, …]`). */
function pairs(reply: unknown): Map<string, unknown> {
  const map = new Map<string, unknown>();
  if (!Array.isArray(reply)) return map;
  for (let i = 0; i + 1 < reply.length; i += 2) map.set(String(reply[i]), reply[i + 1]);
  return map;
}

/**
 * Keeps the partition streams short: every 30 s, per partition, `XTRIM MINID ~` at the point `trimPoint` allows
 * (archived by the projector, delivered to and acknowledged by every group, older than the retention window).
 * Approximate trimming removes whole stream nodes only, so it never goes past that point.
 */
@Injectable()
export class StreamTrimmer {
  private readonly logger = new Logger(StreamTrimmer.name);
  private readonly trimmed;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly dataSource: DataSource,
    metrics: Metrics,
  ) {
    this.trimmed = metrics.counter({
      name: 'qunli_stream_trimmed_total',
      help: 'Entries removed from the partition streams after the projector archived them',
    });
  }

  start(intervalMs = TRIM_INTERVAL_MS): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private tick(): void {
    if (this.running) return;
    this.running = this.trimOnce()
      .then(
        () => undefined,
        (error: unknown) => {
          // The next tick tries again; trimming late only costs Redis memory for a while.
          this.logger.error({ message: 'stream trim failed', error: (error as Error).message });
        },
      )
      .finally(() => {
        this.running = undefined;
      });
  }

  /** Trim every partition once; returns the number of entries removed. */
  async trimOnce(nowMs = Date.now(), retentionMs = TRIM_RETENTION_MS): Promise<number> {
    const rows = await this.dataSource.query<{ partition: number; last_entry_id: string }[]>(
      'SELECT partition, last_entry_id FROM projection_checkpoints WHERE projector = $1',
      [ConsumerGroup.Projector],
    );
    const archived = new Map(rows.map((row) => [row.partition, row.last_entry_id]));
    let total = 0;
    for (let partition = 0; partition < this.keys.partitions; partition++) {
      const archivedThrough = archived.get(partition);
      if (archivedThrough === undefined) continue;
      const key = this.keys.stream(partition);
      if ((await this.redis.exists(key)) === 0) continue;
      const point = trimPoint({ archivedThrough, groups: await this.groups(key), nowMs, retentionMs });
      if (point === null) continue;
      const removed = await this.redis.xtrim(key, 'MINID', '~', point);
      if (removed > 0) this.trimmed.inc(removed);
      total += removed;
    }
    return total;
  }

  private async groups(key: string): Promise<GroupPosition[]> {
    const reply = await this.redis.xinfo('GROUPS', key);
    const positions: GroupPosition[] = [];
    for (const entry of Array.isArray(reply) ? reply : []) {
      const info = pairs(entry);
      const group = String(info.get('name'));
      let oldestPendingId: string | null = null;
      if (Number(info.get('pending')) > 0) {
        const [, oldest] = (await this.redis.xpending(key, group)) as [number, string | null];
        oldestPendingId = oldest;
      }
      positions.push({ group, lastDeliveredId: String(info.get('last-delivered-id')), oldestPendingId });
    }
    return positions;
  }
}
