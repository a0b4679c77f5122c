import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Keyspace } from '@app/contracts';
import { QunliConfig } from '@app/platform';
import { EventLog } from './event-log.js';
import { StreamConsumers } from './stream-consumers.js';
import { StreamMetrics } from './stream-metrics.js';
import { EventLogClient } from './event-log-client.js';
import { StreamErrorFilter } from './stream-error.filter.js';

/** The event log (append) and stream consumers (read) for an app. Requires `PlatformModule`. */
@Global()
@Module({})
export class EventBusModule {
  static forRoot(): DynamicModule {
    return {
      module: EventBusModule,
      providers: [
        {
          provide: Keyspace,
          inject: [QunliConfig],
          useFactory: (c: QunliConfig) => new Keyspace(c.QUNLI_REDIS_PREFIX, c.QUNLI_PARTITIONS),
        },
        EventLog,
        StreamConsumers,
        StreamMetrics,
        { provide: APP_FILTER, useClass: StreamErrorFilter },
        { provide: EventLogClient, inject: [EventLog], useFactory: (log: EventLog) => new EventLogClient(log) },
      ],
      exports: [Keyspace, EventLog, StreamConsumers, EventLogClient],
    };
  }
}
