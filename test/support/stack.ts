import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import pg from 'pg';
import {
  AppProcess,
  FakeOneBot,
  type PostResult,
  assertBuilt,
  createTestDatabase,
  deleteKeys,
  freePort,
  LlmDouble,
  PORT_SETTING,
  REPO_ROOT,
  testRedis,
  uniquePrefix,
  type AppUnderTest,
  type LlmDoubleOptions,
  type TestDatabase,
} from '@app/testing';

export const ALL_APPS: AppUnderTest[] = ['ingress', 'scheduler', 'cognition', 'outbound', 'life-director'];
export const STACK_SELF_ID = '10001';
const TOKEN = 'stack-token';
const SECRET = 'stack-secret';

export interface StackOptions {
  /** Extra settings for every app. */
  env?: Record<string, string>;
  llm?: LlmDoubleOptions;
}

/**
 * The five apps as real processes on their own database and Redis key prefix, with a OneBot double (which also
 * posts events to ingress) and an OpenAI-compatible double: a deployment in miniature, for the tests that treat
 * the apps as an operator would (scrape them, stop them).
 */
export class QunliStack {
  readonly apps = new Map<AppUnderTest, AppProcess>();
  readonly prefix = uniquePrefix('stack');
  onebot!: FakeOneBot;
  llm!: LlmDouble;
  sql!: pg.Client;
  redis!: Redis;
  private db: TestDatabase | undefined;
  private messageId = 900_000;

  constructor(private readonly options: StackOptions = {}) {}

  get logDir(): string {
    return join(tmpdir(), `qunli-${this.prefix}`);
  }

  app(name: AppUnderTest): AppProcess {
    const found = this.apps.get(name);
    if (!found) throw new Error(`${name} is not running in this stack`);
    return found;
  }

  async start(): Promise<void> {
    assertBuilt(ALL_APPS);
    this.db = await createTestDatabase('stack');
    this.sql = new pg.Client({ connectionString: this.db.url });
    await this.sql.connect();
    this.redis = testRedis();
    this.llm = await LlmDouble.start(this.options.llm);
    this.onebot = new FakeOneBot({ accessToken: TOKEN, secret: SECRET, selfId: STACK_SELF_ID });
    await this.onebot.start();
    const ports = new Map<AppUnderTest, number>();
    for (const app of ALL_APPS) ports.set(app, await freePort());
    const common: Record<string, string> = {
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      DATABASE_URL: this.db.url,
      QUNLI_REDIS_PREFIX: this.prefix,
      QUNLI_PARTITIONS: '4',
      QUNLI_SELF_ID: STACK_SELF_ID,
      ONEBOT_ACCESS_TOKEN: TOKEN,
      ONEBOT_SECRET: SECRET,
      ONEBOT_HTTP_API_URL: this.onebot.url,
      OPENAI_BASE_URL: this.llm.baseUrl,
      OPENAI_API_KEY: 'stack-key',
      QUNLI_HTTP_HOST: '127.0.0.1',
      QUNLI_LEASE_MS: '2000',
      QUNLI_CLAIM_IDLE_MS: '3000',
      QUNLI_PERSONA: join(REPO_ROOT, 'personas/default.yaml'),
      ...Object.fromEntries(ALL_APPS.map((app) => [PORT_SETTING[app], String(ports.get(app))])),
      ...this.options.env,
    };
    for (const app of ALL_APPS) {
      this.apps.set(
        app,
        new AppProcess(app, { ...common, QUNLI_INSTANCE_ID: `${app}-stack` }, ports.get(app)!, this.logDir),
      );
    }
    try {
      await Promise.all([...this.apps.values()].map((app) => app.start(60_000)));
    } catch (error) {
      throw new Error(`${String(error)}\n${this.logs(30)}`, { cause: error });
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.apps.values()].map((app) => app.stop()));
    await this.onebot?.stop();
    await this.llm?.close();
    await this.sql?.end();
    await this.db?.drop();
    if (this.redis) {
      await deleteKeys(this.redis, this.prefix);
      await this.redis.quit();
    }
  }

  /** A group message from a member, posted by the OneBot double to ingress; `atSelf` addresses the bot. */
  post(
    groupId: string,
    text: string,
    atSelf = false,
    from: { userId: string; nickname: string } = { userId: '20002', nickname: '群友' },
  ): Promise<PostResult> {
    this.messageId += 1;
    return this.onebot.postGroupMessage({
      ingressUrl: `${this.app('ingress').url}/onebot/v11/http`,
      groupId,
      userId: from.userId,
      nickname: from.nickname,
      text,
      atSelf,
      messageId: this.messageId,
    });
  }

  /** What every app last said, for a failing test's message. */
  logs(lines = 25): string {
    return [...this.apps.values()].map((app) => `--- ${app.app} (${app.logFile})\n${app.tail(lines)}`).join('\n');
  }

  /** Poll until `probe` yields a value; on timeout fail with what every app last said. */
  async until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${this.logs()}`);
      await sleep(200);
    }
  }
}
