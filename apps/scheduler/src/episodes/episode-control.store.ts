import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  EventKind,
  Keyspace,
  makeEvent,
  type EpisodeControlPayload,
  type EpisodeControlRecord,
  type EventEnvelope,
} from '@app/contracts';
import { SEAL_FIELD, sealIfValid, type StreamContext } from '@app/event-bus';
import { REDIS } from '@app/platform';

/** How long a control record outlives its last command (real seconds): longer than any job of the episode. */
export const CONTROL_RECORD_TTL_SECONDS = 7 * 86400;

/**
 * Writes the `start` of a dispatched episode unless the group already sent it a newer command (a supersede or a
 * cancel can overtake a grant): record, `episode.control` in the partition stream and the PUBLISH, or nothing.
 * KEYS: control record, stream. ARGV: record JSON, ttl, envelope JSON, channel, payload JSON, seal (ADR 0022; empty:
 * the entry is stored unsealed and every reader validates it).
 */
const START = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if ARGV[6] == '' then
  redis.call('XADD', KEYS[2], '*', 'k', '${EventKind.EpisodeControl}', 'e', ARGV[3])
else
  redis.call('XADD', KEYS[2], '*', 'k', '${EventKind.EpisodeControl}', 'e', ARGV[3], '${SEAL_FIELD}', ARGV[6])
end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
`;

/**
 * The episode control protocol's write side (ADR 0007). Every command is an `episode.control` event, the episode's
 * control record (`Keyspace.episodeControl`: newest command, its seq, whether the episode is stopped) and a PUBLISH
 * on `Keyspace.episodeControlChannel`, all in one commit. The group's lane sends seq 2, 3… in its own commit;
 * the dispatcher sends `start` (seq 1) when it grants the slot.
 */
@Injectable()
export class EpisodeControlStore {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {
    this.redis.defineCommand('qunliEpisodeStart', { numberOfKeys: 2, lua: START });
  }

  static record(payload: EpisodeControlPayload): EpisodeControlRecord {
    return {
      seq: payload.seq,
      latest: payload,
      stopped: payload.command === 'cancel' || payload.command === 'supersede',
    };
  }

  /** Stage a command of the group's lane in its commit. */
  stage(ctx: StreamContext, event: EventEnvelope<EpisodeControlPayload>): void {
    const payload = event.payload;
    ctx.publish(event);
    ctx.stage(
      'SET',
      [this.keys.episodeControl(ctx.partition, payload.episodeId)],
      JSON.stringify(EpisodeControlStore.record(payload)),
      'EX',
      CONTROL_RECORD_TTL_SECONDS,
    );
    ctx.stage('PUBLISH', [], this.keys.episodeControlChannel, JSON.stringify(payload));
  }

  /** The dispatcher's `start`; false when a newer command was there first. */
  async start(groupId: string | null, payload: EpisodeControlPayload, now: Date): Promise<boolean> {
    const partition = this.keys.partitionOf(groupId);
    const event = makeEvent({
      kind: EventKind.EpisodeControl,
      groupId,
      source: 'scheduler',
      createdAt: now,
      payload,
    });
    const { bytes, seal } = sealIfValid(event);
    const written = await (
      this.redis as unknown as { qunliEpisodeStart(...a: (string | number | Buffer)[]): Promise<number> }
    ).qunliEpisodeStart(
      this.keys.episodeControl(partition, payload.episodeId),
      this.keys.stream(partition),
      JSON.stringify(EpisodeControlStore.record(payload)),
      CONTROL_RECORD_TTL_SECONDS,
      bytes,
      this.keys.episodeControlChannel,
      JSON.stringify(payload),
      seal,
    );
    return written === 1;
  }

  async read(groupId: string | null, episodeId: string): Promise<EpisodeControlRecord | undefined> {
    const raw = await this.redis.get(this.keys.episodeControl(this.keys.partitionOf(groupId), episodeId));
    return raw === null ? undefined : (JSON.parse(raw) as EpisodeControlRecord);
  }
}
