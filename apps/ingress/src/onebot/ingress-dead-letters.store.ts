import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { QunliConfig, REDIS } from '@app/platform';
import { IngressMetrics, type Transport } from './ingress.metrics.js';
import type { PayloadProblem } from './onebot-event.normaliser.js';

/** Raw payload kept per dead letter; a 1 MiB body is cut (the head is what a person needs to see). */
const RAW_CHARS = 16 * 1024;

/**
 * The ingress dead-letter stream (`<prefix>:ingress:dead`, capped at `QUNLI_INGRESS_DEAD_LETTERS`): every refused
 * input with its reason, field and raw payload, for inspection with `redis-cli XREVRANGE`. Writing it never
 * delays or fails the answer to the implementation.
 */
@Injectable()
export class IngressDeadLetters {
  private readonly logger = new Logger('IngressDeadLetters');
  private readonly cap: number;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly metrics: IngressMetrics,
    config: QunliConfig,
  ) {
    this.cap = config.QUNLI_INGRESS_DEAD_LETTERS;
  }

  record(transport: Transport, problem: PayloadProblem, raw: string | Buffer | undefined, peer: string): void {
    if (this.cap === 0) return;
    const text = raw === undefined ? '' : (Buffer.isBuffer(raw) ? raw.toString('utf8') : raw).slice(0, RAW_CHARS);
    this.redis
      .xadd(
        this.keys.ingressDeadLetters,
        'MAXLEN',
        '~',
        this.cap,
        '*',
        'transport',
        transport,
        'reason',
        problem.reason,
        'field',
        problem.field,
        'message',
        problem.message.slice(0, 500),
        'peer',
        peer.slice(0, 200),
        'raw',
        text,
        'at',
        new Date().toISOString(),
      )
      .then(
        () => this.metrics.countDeadLettered(problem.reason),
        (error: unknown) => this.logger.warn(`could not keep a refused input: ${(error as Error).message}`),
      );
  }
}
