import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { QueueName, type EpisodeJob } from '@app/contracts';

/**
 * Hands episodes to cognition. The job id is the episode id, which is derived from the trigger event, so a
 * decision handled twice (crash before its commit) dispatches the same job and BullMQ ignores the second.
 */
@Injectable()
export class EpisodeQueue {
  constructor(@InjectQueue(QueueName.Episodes) private readonly queue: Queue<EpisodeJob>) {}

  async dispatch(job: EpisodeJob, priority: number): Promise<void> {
    await this.queue.add('episode', job, {
      jobId: job.episodeId,
      // BullMQ: 1 is the highest priority; ours: 0 is the most urgent.
      priority: priority + 1,
      // Retries cover infrastructure failures only; cognition completes the job with a failed outcome when
      // the episode itself fails.
      attempts: 3,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    });
  }
}
