import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { Keyspace, type EventEnvelope } from '@app/contracts';
import { EventBusModule } from '@app/event-bus';
import { PersonaModule } from '@app/persona';
import { loadConfig, Metrics, PlatformModule } from '@app/platform';
import { deleteKeys, TEST_REDIS_URL, testRedis, uniquePrefix } from '@app/testing';
import { configureIngress } from '../src/configure-ingress.js';
import { OneBotIntakeModule } from '../src/onebot/onebot-intake.module.js';

/**
 * One ingress app in this process, wired like `main.ts` (same `configureIngress`), on its own Redis key prefix and
 * an ephemeral port. Without `PersistenceModule`: nothing here touches Postgres.
 */
export class IngressHarness {
  private constructor(
    readonly app: INestApplication,
    readonly baseUrl: string,
    readonly keys: Keyspace,
    readonly redis: Redis,
  ) {}

  static async start(env: Record<string, string> = {}, prefix = uniquePrefix('ingress')): Promise<IngressHarness> {
    const config = loadConfig('ingress', {
      env: { REDIS_URL: TEST_REDIS_URL, QUNLI_REDIS_PREFIX: prefix, QUNLI_LOG_LEVEL: 'fatal', ...env },
      cwd: import.meta.dirname,
    });
    const moduleRef = await Test.createTestingModule({
      imports: [
        PlatformModule.forApp('ingress', { config, withoutDefaultMetrics: true }),
        EventBusModule.forRoot(),
        PersonaModule,
        OneBotIntakeModule,
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ rawBody: true, logger: false });
    configureIngress(app);
    await app.listen(0, '127.0.0.1');
    const baseUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    return new IngressHarness(app, baseUrl, new Keyspace(prefix, config.QUNLI_PARTITIONS), testRedis());
  }

  get wsUrl(): string {
    return this.baseUrl.replace(/^http/, 'ws');
  }

  post(body: string | Buffer, headers: Record<string, string> = {}, path = '/onebot/v11/http'): Promise<Response> {
    return fetch(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body,
    });
  }

  /** Envelopes in the partition stream of `groupId`, in log order. */
  async events(groupId: string): Promise<EventEnvelope[]> {
    const entries = await this.redis.xrange(this.keys.stream(this.keys.partitionOf(groupId)), '-', '+');
    return entries.map(([, fields]) => {
      const json = fields[fields.indexOf('e') + 1];
      return JSON.parse(json ?? 'null') as EventEnvelope;
    });
  }

  /** Events in every partition stream of this app's prefix. */
  async totalEvents(): Promise<number> {
    let total = 0;
    for (let p = 0; p < this.keys.partitions; p++) total += await this.redis.xlen(this.keys.stream(p));
    return total;
  }

  async metrics(): Promise<string> {
    return (await fetch(`${this.baseUrl}/metrics`)).text();
  }

  /** Value of one sample as `GET /metrics` shows it, 0 when absent. Labels are matched as given. */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    return sample(await this.metrics(), name, labels);
  }

  /**
   * The same from the app's own registry, without the scrape-time contributors (the stream gauges read Redis, so
   * a scrape waits while Redis is down).
   */
  async ownMetric(name: string, labels: Record<string, string> = {}): Promise<number> {
    return sample(await this.app.get(Metrics).registry.metrics(), name, labels);
  }

  /** Wait until the partition of `groupId` holds `count` events (frames have no response to wait for). */
  async waitForEvents(groupId: string, count: number): Promise<EventEnvelope[]> {
    for (let i = 0; i < 200; i++) {
      const events = await this.events(groupId);
      if (events.length >= count) return events;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return this.events(groupId);
  }

  /** Stop the app; `keepKeys` leaves Redis as it is (a restart of ingress). */
  async stop(keepKeys = false): Promise<void> {
    await this.app.close();
    if (!keepKeys) await deleteKeys(this.redis, this.keys.prefix);
    await this.redis.quit();
  }
}

export function sample(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return 0;
}
