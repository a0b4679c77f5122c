import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, type EpisodeJob } from '@app/contracts';
import { checkedEpisodeJob, type StreamContext } from '@app/event-bus';
import { REDIS } from '@app/platform';

/** Longer than any episode lives (real seconds); the key is dropped when the episode ends. */
const JOB_TTL_SECONDS = 2 * 86400;

/** The start job of each unfinished episode, kept so its continuations (after a wait) can be built from it. */
@Injectable()
export class EpisodeJobStore {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {}

  stageKeep(ctx: StreamContext, job: EpisodeJob): void {
    ctx.stage('SET', [this.keys.episodeJob(ctx.partition, job.episodeId)], JSON.stringify(job), 'EX', JOB_TTL_SECONDS);
  }

  stageDrop(ctx: StreamContext, episodeId: string): void {
    ctx.stage('DEL', [this.keys.episodeJob(ctx.partition, episodeId)]);
  }

  async load(partition: number, episodeId: string): Promise<EpisodeJob | undefined> {
    const raw = await this.redis.get(this.keys.episodeJob(partition, episodeId));
    return raw === null ? undefined : checkedEpisodeJob(JSON.parse(raw) as EpisodeJob);
  }
}
