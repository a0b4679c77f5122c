import { Injectable } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Waiting between attempts to reach an unreachable OneBot implementation. Infrastructure time, not product time,
 * so it does not follow QUNLI_TIME_SCALE. A seam for tests that bring the peer up during the wait.
 */
@Injectable()
export class SendBackoff {
  wait(delayMs: number, _attempt: number): Promise<void> {
    return delay(delayMs);
  }
}
