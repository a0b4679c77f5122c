import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { DelayedError, type Job } from 'bullmq';
import { EventKind, makeEvent, PRIORITY, QueueName } from '@app/contracts';
import { EventLog } from '@app/event-bus';
import { ChatModel } from '@app/llm';
import { MemoryBudget } from '@app/memory';
import { Clock, Metrics } from '@app/platform';
import { ActivityDetailJob } from './activity-detail.job.js';
import { detailMessages, validateDetail, WRITE_DETAIL_TOOL } from './activity-detail.rules.js';

/** `life-details`: one validated line of utils-model detail for an activity; refused lines are counted, not stored. */
@Processor(QueueName.LifeDetails, { autorun: false, concurrency: 1 })
export class ActivityDetailProcessor extends WorkerHost implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ActivityDetailProcessor.name);
  private readonly refused;

  constructor(
    private readonly chat: ChatModel,
    private readonly budget: MemoryBudget,
    private readonly eventLog: EventLog,
    private readonly clock: Clock,
    metrics: Metrics,
  ) {
    super();
    this.refused = metrics.counter({
      name: 'qunli_life_details_refused_total',
      help: 'Utils-model activity details refused by validation, not recorded',
    });
  }

  onApplicationBootstrap(): void {
    this.worker.run().catch((error: unknown) => this.logger.error(`detail worker stopped: ${String(error)}`));
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.close();
  }

  async process(job: Job, token?: string): Promise<{ recorded: boolean }> {
    const detail = ActivityDetailJob.create(job.data as ActivityDetailJob);
    const reservation = await this.budget.reserve(null, 'life_detail');
    if (!reservation.granted) {
      await job.moveToDelayed(Date.now() + this.clock.realUntil(reservation.retryAt), token);
      throw new DelayedError();
    }
    const response = await this.chat.complete({
      role: 'utils',
      messages: detailMessages(detail.title, detail.description),
      tools: [WRITE_DETAIL_TOOL],
      toolChoice: 'required',
    });
    await reservation.settle(response.usage.promptTokens, response.usage.completionTokens);
    const call = response.toolCalls.find((c) => c.name === WRITE_DETAIL_TOOL.name);
    const verdict = call ? validateDetail(call.arguments) : ({ ok: false, reason: 'no write_detail call' } as const);
    if (!verdict.ok) {
      this.budget.counted('life_detail', 'invalid');
      this.refused.inc();
      this.logger.warn(`activity detail refused for ${detail.activityId}: ${verdict.reason}`);
      return { recorded: false };
    }
    this.budget.counted('life_detail', 'ok');
    await this.eventLog.append(
      makeEvent({
        kind: EventKind.PersonalActivityDetailed,
        groupId: null,
        source: 'life-director',
        priority: PRIORITY.background,
        createdAt: this.clock.now(),
        payload: { activityId: detail.activityId, detail: verdict.detail },
      }),
    );
    return { recorded: true };
  }
}
