import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { episodeJobId, QueueName, type EpisodeJob } from '@app/contracts';

/**
 * Hands episode runs to cognition. The job id is `episodeJobId(episode, mode, controlSeq)`, derived from the
 * trigger event and the control command it runs under, so a dispatch repeated after a crash adds the same job and
 * BullMQ ignores the second. Every job was validated (`checkedEpisodeJob`: what `EpisodeJob.create` checks, the
 * fast way) when the group's turn built it, before it was offered, and cognition validates it again when it takes
 * it; it is not checked a third time here, on the @'s way from its grant to a worker (a job changed in Redis
 * meanwhile fails in cognition as invalid, for good).
 */
@Injectable()
export class EpisodeQueue {
  constructor(@InjectQueue(QueueName.Episodes) private readonly queue: Queue<EpisodeJob>) {}

  async dispatch(job: EpisodeJob, priority: number): Promise<void> {
    await this.queue.add('episode', job, {
      jobId: episodeJobId(job.episodeId, job.mode ?? 'start', job.controlSeq ?? 1),
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
