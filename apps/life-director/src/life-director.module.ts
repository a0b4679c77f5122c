import { Module } from '@nestjs/common';
import { QueueName } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { chatModelProvider } from '@app/llm';
import { MemoryStoresModule } from '@app/memory';
import { PersistenceModule } from '@app/persistence';
import { PersonaModule, PersonaPolicy } from '@app/persona';
import { PlatformModule, QueuesModule, QunliConfig, type PlatformOptions } from '@app/platform';
import { ActivityDetailProcessor } from './life/activity-detail.processor.js';
import { LIFE_SCRIPT, LifeDirector } from './life/life-director.service.js';
import { loadLifeScript } from './life/life-script.js';
import { LifeStateStore } from './life/life-state.store.js';
import { LifeTickProcessor } from './life/life-tick.processor.js';
import { MEMORY_WORKER_CONTROLLERS, MEMORY_WORKER_PROVIDERS } from './memory/memory-workers.js';

/**
 * The bot's life line (ADR-0001 §10, ADR-0015) and the memory workers (ADR-0014, ADR-0016): ticks through the life
 * script and records `personal.*` events; consumes messages as the `memory` consumer group and writes `memory.*`.
 */
@Module({})
export class LifeDirectorModule {
  static forApp(options: PlatformOptions = {}) {
    return {
      module: LifeDirectorModule,
      imports: [
        PlatformModule.forApp('life-director', options),
        PersistenceModule.forRoot(),
        EventBusModule.forRoot(),
        PersonaModule,
        MemoryStoresModule,
        QueuesModule.forRoot(
          QueueName.LifeTicks,
          QueueName.LifeDetails,
          QueueName.MemorySummaries,
          QueueName.MemoryMaintenance,
        ),
      ],
      controllers: [...MEMORY_WORKER_CONTROLLERS],
      providers: [
        chatModelProvider,
        {
          provide: LIFE_SCRIPT,
          inject: [QunliConfig, PersonaPolicy],
          useFactory: (config: QunliConfig, persona: PersonaPolicy) =>
            loadLifeScript(config.QUNLI_LIFE_SCRIPT, persona),
        },
        LifeStateStore,
        LifeDirector,
        LifeTickProcessor,
        ActivityDetailProcessor,
        ...MEMORY_WORKER_PROVIDERS,
      ],
    };
  }
}
