import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import type { EventEnvelope, Keyspace } from '@app/contracts';
import type { BatchEntry } from '@app/event-bus';
import { ProjectionRepository } from '@app/persistence';

/** Every event in a test deployment's partition streams, oldest first per partition. */
export async function streamEvents(redis: Redis, keys: Keyspace): Promise<BatchEntry[]> {
  const entries: BatchEntry[] = [];
  for (let partition = 0; partition < keys.partitions; partition++) {
    for (const [entryId, fields] of await redis.xrange(keys.stream(partition), '-', '+')) {
      const event = JSON.parse(fields[fields.indexOf('e') + 1]!) as EventEnvelope;
      entries.push({ partition, entryId, event, deliveries: 1 });
    }
  }
  return entries;
}

/**
 * Project everything in the streams into Postgres the way the projector does (its own writer; archived events are
 * skipped, so calling it again projects only what is new).
 */
export async function projectStreams(redis: Redis, keys: Keyspace, dataSource: DataSource): Promise<number> {
  const entries = await streamEvents(redis, keys);
  const { applied } = await new ProjectionRepository(dataSource).project('projector', entries);
  return applied.length;
}
