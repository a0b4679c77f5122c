import type { Redis } from 'ioredis';
import { WAKES, type EventEnvelope, type Keyspace } from '@app/contracts';
import { unlessAborted } from './unless-aborted.js';

/**
 * Tell the consumer groups that rest between reads (`WAKES`, `ConsumerOptions.idleLingerMs`) that these appended
 * events are there: one PUBLISH of the partition per group and partition. Call it once the append has committed.
 * A lost wake only costs latency: a resting reader reads again when its rest ends anyway.
 */
export async function wakeConsumers(redis: Redis, keys: Keyspace, events: readonly EventEnvelope[]): Promise<void> {
  let wakes: Set<string> | undefined;
  for (const event of events) {
    const groups = WAKES[event.kind];
    if (!groups) continue;
    const partition = keys.partitionOf(event.groupId);
    for (const group of groups) (wakes ??= new Set()).add(`${group}\u0000${partition}`);
  }
  if (!wakes) return;
  await Promise.all(
    [...wakes].map((wake) => {
      const [group, partition] = wake.split('\u0000') as [string, string];
      return redis.publish(keys.streamWakeChannel(group), partition);
    }),
  );
}

/**
 * The wakes of events appended by one Lua script to one partition's stream, for the script to PUBLISH itself right
 * after its XADDs (`wakeInScript`): `channels` is the wake channels joined by newlines ('' for none), `partition`
 * the message. A resting reader is then woken by the same round trip that appended the entry, not by a PUBLISH the
 * writer sends once the script's reply has reached it (behind whatever else it had in flight meanwhile).
 */
export function scriptWakes(keys: Keyspace, partition: number, events: readonly EventEnvelope[]): [string, string] {
  const channels = new Set<string>();
  for (const event of events) for (const group of WAKES[event.kind] ?? []) channels.add(keys.streamWakeChannel(group));
  return [[...channels].join('\n'), String(partition)];
}

/** Lua: publish the wakes `scriptWakes` made, passed as ARGV[c] (channels) and ARGV[c + 1] (partition). */
export function wakeInScript(channelsArg: number): string {
  return `for channel in string.gmatch(ARGV[${channelsArg}], '[^\\n]+') do redis.call('PUBLISH', channel, ARGV[${channelsArg + 1}]) end`;
}

/**
 * A consumer group's resting readers: a reader whose last read held nothing it handles waits here (`rest`) before it
 * reads again, until its time is up or a writer wakes its partition (`wakeConsumers`). One subscription per
 * process and group. A wake that arrives while the reader is still reading is kept, so the next rest ends at once.
 */
export class StreamWakes {
  private readonly subscriber: Redis;
  private readonly resting = new Map<number, () => void>();
  private readonly woken = new Set<number>();

  constructor(
    redis: Redis,
    private readonly channel: string,
    private readonly onError: (error: unknown) => void,
  ) {
    this.subscriber = redis.duplicate({ connectionName: `qunli-wake-${channel.split(':').pop() ?? ''}` });
    this.subscriber.on('message', (_channel: string, message: string) => this.wake(Number(message)));
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(this.channel);
  }

  async stop(): Promise<void> {
    for (const end of this.resting.values()) end();
    await this.subscriber.quit().catch(() => this.subscriber.disconnect());
  }

  /** Wait up to `ms` (real time), or until `partition` is woken or `stopping` aborts. */
  async rest(partition: number, ms: number, stopping: AbortSignal): Promise<void> {
    if (this.woken.delete(partition)) return;
    let timer: NodeJS.Timeout | undefined;
    await unlessAborted(
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
        this.resting.set(partition, resolve);
      }),
      stopping,
    ).catch((error: unknown) => this.onError(error));
    clearTimeout(timer);
    this.resting.delete(partition);
    this.woken.delete(partition);
  }

  private wake(partition: number): void {
    if (!Number.isInteger(partition)) return;
    const resting = this.resting.get(partition);
    if (resting) resting();
    else this.woken.add(partition);
  }
}
