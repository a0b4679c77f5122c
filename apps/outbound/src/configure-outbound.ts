import type { INestApplication } from '@nestjs/common';
import { ConsumerGroup } from '@app/contracts';
import { connectStreamConsumer } from '@app/event-bus';

/** Connects outbound's stream consumer to the app. Called by `main.ts` and by the wiring test. */
export function configureOutbound(app: INestApplication): void {
  connectStreamConsumer(app, ConsumerGroup.Outbound);
}
