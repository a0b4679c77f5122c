import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { QueueName } from '@app/contracts';
import { jobKey } from '@app/memory';
import { Clock, QunliConfig } from '@app/platform';
import { JargonMeaningsJob, JargonScanJob, ThreadSummaryJob } from './memory-jobs.js';

/** A job added by a stream handler may run before the handler's commit lands; this head start avoids a retry. */
const COMMIT_HEAD_START_MS = 500;
const ATTEMPTS = { attempts: 3, backoff: { type: 'exponential', delay: 2000 } } as const;

/** Memory's durable work, with deterministic ids so a redelivered message or a retried job adds nothing twice. */
@Injectable()
export class MemoryQueues {
  constructor(
    @InjectQueue(QueueName.MemorySummaries) readonly summaries: Queue,
    @InjectQueue(QueueName.MemoryMaintenance) readonly maintenance: Queue,
    private readonly clock: Clock,
    private readonly config: QunliConfig,
  ) {}

  async chunk(groupId: string, threadId: string, through: number, reason: 'every_n' | 'idle'): Promise<void> {
    const job = ThreadSummaryJob.create({ groupId, threadId, through, reason });
    await this.summaries.add('chunk', job, {
      jobId: jobKey('sum', groupId, threadId, String(through)),
      delay: COMMIT_HEAD_START_MS,
      removeOnComplete: { count: 1000 },
      removeOnFail: { count: 1000 },
      ...ATTEMPTS,
    });
  }

  /** One delayed idle job per thread, pushed back by every message (BullMQ debounce: replace + extend). */
  async idle(groupId: string, threadId: string, through: number): Promise<void> {
    const delay = this.clock.ttlMs(this.config.QUNLI_MEMORY_THREAD_IDLE_MINUTES * 60_000);
    await this.summaries.add('idle', ThreadSummaryJob.create({ groupId, threadId, through, reason: 'idle' }), {
      delay,
      deduplication: { id: jobKey('idle', groupId, threadId), ttl: delay, extend: true, replace: true },
      removeOnComplete: { count: 1000 },
      removeOnFail: { count: 1000 },
      ...ATTEMPTS,
    });
  }

  /**
   * At most one jargon scan per group per product hour, counted from the last scan (BullMQ's throttle): windows on
   * the clock's hours let two scans run a minute apart, either side of an hour.
   */
  async jargonScan(groupId: string): Promise<string | undefined> {
    const hour = this.clock.ttlMs(60 * 60_000);
    const job = await this.maintenance.add('jargon-scan', JargonScanJob.create({ groupId }), {
      deduplication: { id: jobKey('jscan', groupId), ttl: hour },
      removeOnComplete: { count: 200 },
      removeOnFail: { count: 200 },
    });
    return job.id;
  }

  /**
   * A scan's words, judged together. The id follows the scan, so a retried scan adds nothing; a later scan may ask
   * again about a word an earlier answer left out, or whose job failed.
   */
  async jargonMeanings(scanId: string, job: JargonMeaningsJob): Promise<void> {
    await this.maintenance.add('jargon-meanings', job, {
      jobId: jobKey('jargon', job.groupId, scanId),
      removeOnComplete: { count: 1000 },
      removeOnFail: { count: 1000 },
      ...ATTEMPTS,
    });
  }
}
