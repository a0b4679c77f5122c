import { Module } from '@nestjs/common';
import { QueueName } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { PersistenceModule, ProjectorModule } from '@app/persistence';
import { PlatformModule, QueuesModule } from '@app/platform';
import { EpisodeQueue } from './episodes/episode.queue.js';
import { MessageConsumer } from './messages/message.consumer.js';
import { OutcomeConsumer } from './events/outcome.consumer.js';
import { EventStates } from './events/event-states.repository.js';

/**
 * The fast plane: decisions about every event, the event state machine, and episode dispatch. It also runs the
 * projector, which keeps Postgres current from the log (one consumer group with its own checkpoints).
 */
@Module({
  imports: [
    PlatformModule.forApp('scheduler'),
    PersistenceModule.forRoot(),
    EventBusModule.forRoot(),
    ProjectorModule,
    QueuesModule.forRoot(QueueName.Episodes),
  ],
  controllers: [MessageConsumer, OutcomeConsumer],
  providers: [EpisodeQueue, EventStates],
})
export class SchedulerModule {}
