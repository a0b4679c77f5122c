import type { INestApplication } from '@nestjs/common';
import { ConsumerGroup } from '@app/contracts';
import { connectStreamConsumer } from '@app/event-bus';

/**
 * Real ms outbound's readers rest after a read that held none of its kinds (sends and recalls, a sliver of the
 * log): the writers of those kinds wake the partition at once (`WAKES`), so the rest only bounds how late a send
 * whose wake was lost is read. Without it each reader woke for every entry of the log only to skip it.
 */
export const OUTBOUND_IDLE_READ_MS = 250;

/**
 * Connects outbound's stream consumer to the app. Called by `main.ts` and by the wiring test. Its handlers are
 * idempotent (ADR 0041): a send's enqueue is keyed by its action, and a duplicate of one already delivered finds
 * its ledger's `done` marker and sends nothing; a recall only stages commands. So the reader skips its inbox
 * lookup, a round trip on every send's way out.
 */
export function configureOutbound(app: INestApplication): void {
  connectStreamConsumer(app, ConsumerGroup.Outbound, { idleLingerMs: OUTBOUND_IDLE_READ_MS, idempotent: true });
}
