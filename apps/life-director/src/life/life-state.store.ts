import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { Metrics, REDIS } from '@app/platform';
import type { LifeState } from './life-line.rules.js';

/** Where the life director keeps its position on the life line: one key in the partition of its events. */
@Injectable()
export class LifeStateStore {
  private readonly logger = new Logger(LifeStateStore.name);
  private readonly unreadable;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    metrics: Metrics,
  ) {
    this.unreadable = metrics.counter({
      name: 'qunli_life_state_unreadable_total',
      help: 'Ticks that found the stored life state unreadable and started over from the script',
    });
  }

  get key(): string {
    return this.keys.lifeState(this.keys.partitionOf(null));
  }

  async read(): Promise<LifeState | null> {
    const raw = await this.redis.get(this.key);
    if (raw === null) return null;
    try {
      const state = JSON.parse(raw) as LifeState;
      if (typeof state.tickedAt === 'string' && typeof state.scriptVersion === 'string' && 'current' in state) {
        return state;
      }
      this.logger.error('stored life state lacks tickedAt/scriptVersion/current; starting over from the script');
    } catch (error) {
      this.logger.error(`stored life state is not JSON (${(error as Error).message}); starting over from the script`);
    }
    this.unreadable.inc();
    return null;
  }

  /** A tick that recorded nothing moves only its tick time. */
  async save(state: LifeState): Promise<void> {
    await this.redis.set(this.key, JSON.stringify(state));
  }

  /** Adds the write to a commit (the tick's MULTI), so the state moves only together with its events. */
  write(tx: ReturnType<Redis['multi']>, state: LifeState): void {
    tx.set(this.key, JSON.stringify(state));
  }
}
