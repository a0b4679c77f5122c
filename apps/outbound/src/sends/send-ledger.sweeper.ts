import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Keyspace } from '@app/contracts';
import { SendLedger } from './send-ledger.repository.js';

/** How long a finished action's ledger entries are kept: far longer than any redelivery or re-run of its action. */
export const LEDGER_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
const SWEEP_EVERY_MS = 60 * 60 * 1000;

/**
 * Keeps the send ledger from growing forever (Redis 7.0 cannot expire hash fields). Every replica sweeps every
 * partition; deleting an already-deleted field is harmless, so no coordination is needed. Postgres `sends`
 * keeps the permanent record.
 */
@Injectable()
export class SendLedgerSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('SendLedgerSweeper');
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly ledger: SendLedger,
    private readonly keys: Keyspace,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep(new Date(Date.now() - LEDGER_RETENTION_MS))
        .then((deleted) => {
          if (deleted > 0) this.log.log({ message: 'pruned finished send ledger entries', deleted });
        })
        .catch((error: unknown) => {
          this.log.error({ message: 'send ledger sweep failed', error: String(error) });
        })
        .finally(() => {
          this.running = undefined;
        });
    }, SWEEP_EVERY_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async sweep(before: Date): Promise<number> {
    let deleted = 0;
    for (let partition = 0; partition < this.keys.partitions; partition++) {
      deleted += await this.ledger.prune(partition, before);
    }
    return deleted;
  }
}
