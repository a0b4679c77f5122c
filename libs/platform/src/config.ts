import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { plainToInstance } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsISO8601,
  IsNumber,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  validateSync,
} from 'class-validator';
import { parse as parseYaml } from 'yaml';
import { redisTarget } from './redis.js';

export const APP_NAMES = ['ingress', 'scheduler', 'cognition', 'outbound', 'life-director', 'tool'] as const;
export type AppName = (typeof APP_NAMES)[number];

const URL_OPTIONS = { require_tld: false, require_protocol: true } as const;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/**
 * Every setting, named exactly as its environment variable (the operating contract in ARCHITECTURE.md).
 * Sources, later wins: defaults → `qunli.yaml` (or `QUNLI_CONFIG`) → environment.
 */
export class QunliConfig {
  @Matches(/^(rediss?(\+cluster)?:\/\/|unix:\/\/)/i, {
    message:
      'must be a redis:// or rediss:// URL, a Unix socket (unix:///run/redis/redis.sock), or a Redis Cluster seed list (redis+cluster://host1:7001,host2:7002)',
  })
  REDIS_URL = 'redis://127.0.0.1:6379';

  @Matches(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// URL' })
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/qunli';

  @IsOptional()
  @IsUrl(URL_OPTIONS, { message: 'must be an http(s) URL' })
  OPENAI_BASE_URL?: string;

  @IsOptional()
  @IsString()
  OPENAI_API_KEY?: string;

  @IsString()
  QUNLI_MODEL_PLANNER = 'gpt-4o-mini';

  @IsString()
  QUNLI_MODEL_REPLYER = 'gpt-4o-mini';

  @IsString()
  QUNLI_MODEL_UTILS = 'gpt-4o-mini';

  @IsOptional()
  @Matches(/^[1-9][0-9]{4,11}$/, { message: 'must be a QQ number' })
  QUNLI_SELF_ID?: string;

  /** Comma list of names the bot answers to; empty: the persona's name and aliases. */
  @IsString()
  QUNLI_NICKNAMES = '';

  /** Comma list of group ids the bot lives in, or `*` for every group. */
  @Matches(/^(\*|[0-9]+(,[0-9]+)*)$/, { message: 'must be * or a comma list of group ids' })
  QUNLI_GROUPS = '*';

  @IsOptional()
  @IsString()
  ONEBOT_ACCESS_TOKEN?: string;

  @IsOptional()
  @IsString()
  ONEBOT_SECRET?: string;

  @IsOptional()
  @IsUrl(URL_OPTIONS, { message: 'must be an http(s) URL' })
  ONEBOT_HTTP_API_URL?: string;

  @IsOptional()
  @Matches(/^wss?:\/\//, { message: 'must be a ws:// or wss:// URL' })
  ONEBOT_WS_URL?: string;

  @IsInt()
  @Min(0)
  @Max(65535)
  INGRESS_PORT = 8080;

  @IsInt()
  @Min(0)
  @Max(65535)
  SCHEDULER_PORT = 8081;

  @IsInt()
  @Min(0)
  @Max(65535)
  COGNITION_PORT = 8082;

  @IsInt()
  @Min(0)
  @Max(65535)
  OUTBOUND_PORT = 8083;

  @IsInt()
  @Min(0)
  @Max(65535)
  LIFE_DIRECTOR_PORT = 8084;

  @IsInt()
  @Min(0)
  @Max(65535)
  PANEL_PORT = 8085;

  /** Every product timer (debounce, tick, cooldown, episode deadline) runs this many times faster. */
  @IsNumber()
  @Min(0.001)
  @Max(100000)
  QUNLI_TIME_SCALE = 1;

  /**
   * The instant product time and wall time agree when `QUNLI_TIME_SCALE` is not 1 (ISO time). Every process of a
   * deployment must be given the same one, so they agree on product time; required when the scale is not 1.
   */
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'must be an ISO 8601 time such as 2026-12-01T00:00:00Z' })
  QUNLI_TIME_EPOCH?: string;

  /** Isolates one deployment's Redis keys (and a test run's). */
  @Matches(/^[a-zA-Z0-9_.-]{1,64}$/, { message: 'must be 1-64 characters of [a-zA-Z0-9_.-]' })
  QUNLI_REDIS_PREFIX = 'qunli';

  /** Event stream partitions. Fixed for a deployment's lifetime: changing it moves groups between streams. */
  @IsInt()
  @Min(1)
  @Max(1024)
  QUNLI_PARTITIONS = 16;

  /** Deliveries of one stream entry before it goes to the dead-letter stream. */
  @IsInt()
  @Min(1)
  @Max(100)
  QUNLI_MAX_DELIVERIES = 5;

  /** Idle time after which the janitor reclaims an unacknowledged entry; longer than the slowest handler. */
  @IsInt()
  @Min(100)
  QUNLI_CLAIM_IDLE_MS = 60_000;

  /** First retry delay of a failing stream handler (real ms); doubles per failure up to QUNLI_RETRY_MAX_MS. The
   * entry is retried in place, so its group waits at most the retry budget before a poison event dead-letters. */
  @IsInt()
  @Min(1)
  QUNLI_RETRY_BASE_MS = 250;

  /** Longest delay between two retries of a failing stream handler (real ms). */
  @IsInt()
  @Min(1)
  QUNLI_RETRY_MAX_MS = 4000;

  /** Partition lease length; an owner that stops renewing loses its partitions after this long. */
  @IsInt()
  @Min(500)
  QUNLI_LEASE_MS = 15_000;

  /** Name of this process among its consumer group's members; default host-pid. */
  @IsString()
  QUNLI_INSTANCE_ID = `${hostname()}-${process.pid}`;

  @IsIn(LOG_LEVELS)
  QUNLI_LOG_LEVEL: LogLevelName = 'log';

  /** The persona policy file (YAML). */
  @IsString()
  QUNLI_PERSONA = 'personas/default.yaml';

  /** Longest text kept in a message's plain rendering; longer text is cut and marked truncated. */
  @IsInt()
  @Min(100)
  @Max(100_000)
  QUNLI_MAX_TEXT_CHARS = 4000;

  /** Wall-clock budget of one episode, before time scaling. */
  @IsInt()
  @Min(1000)
  QUNLI_EPISODE_TIMEOUT_MS = 60_000;

  /**
   * Connections an app's Postgres pool may hold. An episode's prompt sections read about ten things at once, so a
   * cognition process wants about that many per concurrent episode start, and opens them all at start and keeps
   * them (ADR 0039); the other apps open them as queries need them and rarely have more than a few in flight. Count
   * them against Postgres' `max_connections` across every replica.
   */
  @IsInt()
  @Min(1)
  @Max(100)
  QUNLI_DB_POOL_SIZE = 10;

  /**
   * The projector's statements go to Postgres as named prepared statements, parsed and planned once per connection
   * (ADR 0053): true or false. Set false behind a pooler in transaction mode that does not track them (PgBouncer
   * before 1.21, or with `max_prepared_statements = 0`).
   */
  @IsIn(['true', 'false'])
  QUNLI_DB_PREPARED_STATEMENTS: 'true' | 'false' = 'true';

  /** Episodes one cognition process runs at once. */
  @IsInt()
  @Min(1)
  @Max(256)
  QUNLI_COGNITION_CONCURRENCY = 4;

  /** Timeout of one LLM request. */
  @IsInt()
  @Min(1000)
  QUNLI_LLM_TIMEOUT_MS = 45_000;

  /** Timeout of one OneBot API call. */
  @IsInt()
  @Min(100)
  QUNLI_ONEBOT_TIMEOUT_MS = 10_000;

  /** Attempts per message segment before a send is given up as failed. */
  @IsInt()
  @Min(1)
  @Max(10)
  QUNLI_SEND_MAX_ATTEMPTS = 3;

  /** Longest segment outbound sends; longer replies are split. */
  @IsInt()
  @Min(20)
  @Max(5000)
  QUNLI_SEND_MAX_SEGMENT_CHARS = 500;

  /** Comma list of other bot accounts in the groups; their messages are never input (no reply loops). */
  @Matches(/^([1-9][0-9]{4,11}(,[1-9][0-9]{4,11})*)?$/, { message: 'must be a comma list of QQ numbers' })
  QUNLI_OTHER_BOTS = '';

  /** Comma list of command prefixes handled by something else (`/`, `#`); such messages are never input. */
  @IsString()
  QUNLI_COMMAND_PREFIXES = '';

  /** Largest OneBot input (HTTP body or WebSocket frame) ingress reads, in bytes. */
  @IsInt()
  @Min(1024)
  @Max(16 * 1024 * 1024)
  QUNLI_INGRESS_MAX_BYTES = 1024 * 1024;

  /** Most segments one message may have; more → rejected (`too_many_segments`). */
  @IsInt()
  @Min(1)
  @Max(10_000)
  QUNLI_INGRESS_MAX_SEGMENTS = 200;

  /** Most characters of typed text one message may have; more → rejected (`text_too_long`). */
  @IsInt()
  @Min(100)
  @Max(1_000_000)
  QUNLI_INGRESS_MAX_TEXT_CHARS = 20_000;

  /** How long ingress remembers an input (dedup across transports and retries, and which event a recall withdraws). */
  @IsInt()
  @Min(60)
  @Max(7 * 24 * 3600)
  QUNLI_INGRESS_DEDUP_SECONDS = 3600;

  /** Refused OneBot inputs kept, with their raw payload, in the ingress dead-letter stream. */
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  QUNLI_INGRESS_DEAD_LETTERS = 10_000;

  /**
   * Where the scheduler runs the projector and the keyword lexicon's learning: on its main thread (`inline`), or in
   * a worker thread of their own (`thread`, ADR-0025), which pays on a machine with a core to spare: it costs CPU
   * of its own, but keeps the decisions' thread free of them and the projection lag short.
   */
  @IsIn(['thread', 'inline'])
  QUNLI_PROJECTOR: 'thread' | 'inline' = 'inline';

  /** How outbound reaches the implementation: auto (HTTP API, else forward WS, else the reverse WS via ingress). */
  @IsIn(['auto', 'http', 'ws_forward', 'ws_reverse'])
  QUNLI_SEND_TRANSPORT: 'auto' | 'http' | 'ws_forward' | 'ws_reverse' = 'auto';

  /** Most chat messages one reply becomes (the reply path's max_messages); the last one takes the rest. */
  @IsInt()
  @Min(1)
  @Max(20)
  QUNLI_SEND_MAX_MESSAGES = 5;

  /** Replies longer than this many characters go out folded into one forward message (0: never fold). */
  @IsInt()
  @Min(0)
  @Max(100_000)
  QUNLI_SEND_FOLD_CHARS = 1500;

  /** Polish each reply once through the utils model before it is sent (on/off); any failure sends the original. */
  @IsIn(['on', 'off'])
  QUNLI_SEND_POLISH: 'on' | 'off' = 'off';

  /** Messages one group may be sent per minute on average (token bucket refill), in product time. */
  @IsNumber()
  @Min(0.01)
  QUNLI_SEND_GROUP_PER_MINUTE = 20;

  /** Messages one group may be sent back to back before the per-minute pace applies (token bucket size). */
  @IsInt()
  @Min(1)
  @Max(100)
  QUNLI_SEND_GROUP_BURST = 5;

  /** Messages per second across every group and outbound process, in product time. */
  @IsNumber()
  @Min(0.01)
  QUNLI_SEND_GLOBAL_PER_SECOND = 5;

  /** Human typing pace before each message, in characters per product second (0: no typing delay). */
  @IsNumber()
  @Min(0)
  QUNLI_SEND_TYPING_CHARS_PER_SECOND = 0;

  /** Pause of a group's sends after an unknown outcome (NapCat 1200, usually risk control), in product seconds. */
  @IsNumber()
  @Min(0)
  QUNLI_SEND_COOLDOWN_SECONDS = 60;

  /** First wait before a failed send is tried again (doubles per attempt), in real milliseconds. */
  @IsInt()
  @Min(10)
  @Max(60_000)
  QUNLI_SEND_RETRY_BASE_MS = 1000;

  /** Tries at verifying an unknown send outcome before it is reported as `send.unknown`. */
  @IsInt()
  @Min(1)
  @Max(20)
  QUNLI_SEND_VERIFY_ATTEMPTS = 3;

  /** Minutes between life-director ticks, before time scaling. */
  @IsNumber()
  @Min(0.01)
  QUNLI_LIFE_TICK_MINUTES = 5;

  /** The life script (YAML): goals, milestones, phases, beats and disclosure per group (personas/life/). */
  @IsString()
  QUNLI_LIFE_SCRIPT = 'personas/life/default.yaml';

  /** `on`: the utils model writes one validated line of detail for activities the script marks `detail: true`. */
  @IsIn(['on', 'off'])
  QUNLI_LIFE_DETAILS: 'on' | 'off' = 'off';

  /** After a pause (all life directors down), activities within this many product hours are caught up. */
  @IsNumber()
  @Min(0)
  @Max(720)
  QUNLI_LIFE_CATCHUP_HOURS = 24;

  /** A thread is summarised (and facts extracted) every this many messages. */
  @IsInt()
  @Min(2)
  @Max(1000)
  QUNLI_MEMORY_SUMMARY_EVERY = 60;

  /** A thread quiet this many product minutes is idle: what is not yet summarised is summarised. */
  @IsNumber()
  @Min(0.01)
  QUNLI_MEMORY_THREAD_IDLE_MINUTES = 20;

  /** Without a thread id on events, a gap this long (product minutes) in a group starts a new thread. */
  @IsNumber()
  @Min(0.01)
  QUNLI_MEMORY_THREAD_GAP_MINUTES = 30;

  /** Utils-model calls memory may make per group per product hour (0 disables memory's model calls). */
  @IsInt()
  @Min(0)
  QUNLI_MEMORY_CALLS_PER_HOUR = 30;

  /** Utils-model tokens (in + out) memory may spend per group per product hour. */
  @IsInt()
  @Min(0)
  QUNLI_MEMORY_TOKENS_PER_HOUR = 30_000;

  /** Days chat history and memory are kept; older conversations are erased everywhere (0: kept for ever). */
  @IsNumber()
  @Min(0)
  QUNLI_MEMORY_RETENTION_DAYS = 0;

  /** Comma list of fact categories that may cross groups (profile, preference, relationship, promise, event). */
  @Matches(/^((profile|preference|relationship|promise|event)(,(profile|preference|relationship|promise|event))*)?$/, {
    message: 'must be empty or a comma list of profile, preference, relationship, promise, event',
  })
  QUNLI_MEMORY_SHARED_CATEGORIES = '';

  /** Long-term items (facts, older messages) retrieved for a prompt. */
  @IsInt()
  @Min(1)
  @Max(50)
  QUNLI_MEMORY_TOP_K = 5;

  /** Sightings (messages, by at least two people) before a group word is looked at as jargon. */
  @IsInt()
  @Min(2)
  QUNLI_JARGON_MIN_SIGHTINGS = 5;
  /** Product ms a sender must be quiet in a thread before their fragments become one decision (debounce). */
  @IsInt()
  @Min(0)
  QUNLI_DEBOUNCE_QUIET_MS = 2000;

  /** Product ms after a batch's first fragment when it is decided however much its sender goes on. */
  @IsInt()
  @Min(0)
  QUNLI_DEBOUNCE_MAX_MS = 8000;

  /** Product ms a message addressed to the bot waits at most for the sender's further fragments (0: none). */
  @IsInt()
  @Min(0)
  QUNLI_DEBOUNCE_DIRECT_MS = 800;

  /**
   * Real ms after which an ambient message the scheduler only now reads is decided at once, without its debounce
   * wait: the scheduler is that far behind, and the message has already waited longer than a quiet period would
   * have made it (0: never; every ambient message waits out its debounce however late it is read).
   */
  @IsInt()
  @Min(0)
  QUNLI_AMBIENT_LATE_MS = 2000;

  /** Product ms after its decision by which an event must be answered, unless the event carries its own deadline. */
  @IsInt()
  @Min(1000)
  QUNLI_EVENT_DEADLINE_MS = 300_000;

  /** Episodes running at once across every group and every scheduler process (the LLM capacity handed out). */
  @IsInt()
  @Min(1)
  @Max(10_000)
  QUNLI_DISPATCH_MAX_RUNNING = 16;

  /** Of those, episodes of ambient (not addressed) events at most, so addressed ones always find a free slot. */
  @IsInt()
  @Min(0)
  @Max(10_000)
  QUNLI_DISPATCH_MAX_AMBIENT = 12;

  /** Episodes one group may run at once. */
  @IsInt()
  @Min(1)
  @Max(1000)
  QUNLI_DISPATCH_GROUP_MAX_RUNNING = 2;

  /** Episodes one group may start per product minute (continuations of waiting episodes do not count). */
  @IsInt()
  @Min(1)
  QUNLI_DISPATCH_GROUP_STARTS_PER_MINUTE = 20;

  /** How often an episode may be interrupted to take in the same sender's new messages before they wait their turn. */
  @IsInt()
  @Min(0)
  @Max(20)
  QUNLI_EPISODE_MAX_INTERRUPTS = 3;

  /** Further attempts of an episode that failed for a transient reason (model timeout, unreachable, HTTP error). */
  @IsInt()
  @Min(0)
  @Max(5)
  QUNLI_EPISODE_RETRIES = 1;

  /** Product ms before such a retry (`retryAfter`). */
  @IsInt()
  @Min(0)
  QUNLI_EPISODE_RETRY_MS = 5000;

  /**
   * The shortest gap (real ms) between two polls of one partition's durable timers (ADR 0032), and the beat all
   * partitions' polls share: the wheel sleeps until the next timer it knows of, and an ordinary timer fires at the
   * first beat after it is due (ADR 0046; an urgent one at its due time).
   */
  @IsInt()
  @Min(10)
  @Max(1000)
  QUNLI_TIMER_POLL_MS = 100;

  /**
   * Real ms a process must have been quiet (its event loop under 10% busy) after its heap grew by 64 MB before it
   * runs one full collection to give that memory back (ADR 0035); 0 turns it off. Works only where node runs with
   * `--expose-gc`, which the launchers pass to the scheduler.
   */
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  QUNLI_HEAP_COMPACT_QUIET_MS = 5000;

  /** Bind address of every app's HTTP server. */
  @IsString()
  QUNLI_HTTP_HOST = '0.0.0.0';

  /**
   * Longest a process takes to stop after SIGTERM: work in flight is finished or handed back within it, else the
   * process exits 1. Above the longest episode, below the orchestrator's grace period.
   */
  @IsInt()
  @Min(1000)
  QUNLI_SHUTDOWN_TIMEOUT_MS = 90_000;
  /** LLM steps one episode may take (ADR §8: 3–5). */
  @IsInt()
  @Min(3)
  @Max(5)
  QUNLI_EPISODE_MAX_STEPS = 4;

  /** Tokens (prompt + completion, every call) one episode may spend before it ends by budget. */
  @IsInt()
  @Min(1000)
  QUNLI_EPISODE_TOKEN_BUDGET = 32_000;

  /** New-message interrupts of the planner in a row before the episode stops aborting and finishes its call. */
  @IsInt()
  @Min(0)
  @Max(20)
  QUNLI_PLANNER_MAX_INTERRUPTS = 2;

  /** Chat messages the planner sees (Maisaka `max_context_size`); the window grows to twice this, then is cut. */
  @IsInt()
  @Min(4)
  @Max(200)
  QUNLI_CONTEXT_MESSAGES = 12;

  /** Ambient episodes ask a cheap timing gate (continue / wait / no_action) before planning: off, ambient, always. */
  @IsIn(['off', 'ambient', 'always'])
  QUNLI_TIMING_GATE: 'off' | 'ambient' | 'always' = 'off';

  /** BullMQ lock of a running episode job; a process that dies loses its jobs to others after about this long. */
  @IsInt()
  @Min(1000)
  QUNLI_EPISODE_LOCK_MS = 30_000;

  /** On SIGTERM, how long running episodes may go on before they are handed back to the queue. */
  @IsInt()
  @Min(0)
  QUNLI_SHUTDOWN_GRACE_MS = 20_000;

  /** Comma list of QQ numbers of the bot's owners: the only senders who may cause `owner` tools. */
  @Matches(/^([1-9][0-9]{4,11}(,[1-9][0-9]{4,11})*)?$/, { message: 'must be a comma list of QQ numbers' })
  QUNLI_OWNERS = '';

  /** YAML file of the stickers `send_emoji` may send (id, file, description); unset: no send_emoji. */
  @IsOptional()
  @IsString()
  QUNLI_STICKERS?: string;

  /** YAML file of MCP servers whose tools the planner may find (stdio or streamable HTTP); watched for changes. */
  @IsOptional()
  @IsString()
  QUNLI_MCP_SERVERS?: string;

  /** Default timeout of one tool call. */
  @IsInt()
  @Min(100)
  QUNLI_TOOL_TIMEOUT_MS = 15_000;

  /** Default longest tool result the model sees; longer is cut and marked. */
  @IsInt()
  @Min(100)
  @Max(20_000)
  QUNLI_TOOL_RESULT_MAX_CHARS = 4000;

  /** Attempts after a transient LLM failure (429, 5xx, lost connection), with exponential backoff. */
  @IsInt()
  @Min(0)
  @Max(10)
  QUNLI_LLM_MAX_RETRIES = 2;

  /** First LLM retry backoff; doubles per attempt (a Retry-After from the API wins). */
  @IsInt()
  @Min(10)
  QUNLI_LLM_RETRY_BASE_MS = 500;

  /** Timeout of one planner LLM request (default QUNLI_LLM_TIMEOUT_MS). */
  @IsOptional()
  @IsInt()
  @Min(1000)
  QUNLI_LLM_TIMEOUT_PLANNER_MS?: number;

  /** Timeout of one replyer LLM request (default QUNLI_LLM_TIMEOUT_MS). */
  @IsOptional()
  @IsInt()
  @Min(1000)
  QUNLI_LLM_TIMEOUT_REPLYER_MS?: number;

  /** Timeout of one utils LLM request (default QUNLI_LLM_TIMEOUT_MS). */
  @IsOptional()
  @IsInt()
  @Min(1000)
  QUNLI_LLM_TIMEOUT_UTILS_MS?: number;

  /**
   * How long an idle connection to the LLM API is kept for the next call (ADR 0040). undici's own default, 4 s,
   * closes it between most @s of a conversation, and the next one opens a new TLS connection first. Keep it below
   * the provider's (or proxy's) own idle timeout, 30 s or more for the big ones: a call sent on a connection the
   * server has just closed fails and is retried.
   */
  @IsInt()
  @Min(1000)
  @Max(120_000)
  QUNLI_LLM_KEEP_ALIVE_MS = 20_000;

  /** Stream LLM answers, so an abort (interrupt, deadline) stops generation and billing: true or false. */
  @IsIn(['true', 'false'])
  QUNLI_LLM_STREAM: 'true' | 'false' = 'true';

  /** Optional path of the YAML config file (default `qunli.yaml` in the working directory, when present). */
  @IsOptional()
  @IsString()
  QUNLI_CONFIG?: string;

  /** Epoch ms of `QUNLI_TIME_EPOCH` (0 when unset: scale 1). */
  get timeEpochMs(): number {
    return this.QUNLI_TIME_EPOCH === undefined ? 0 : Date.parse(this.QUNLI_TIME_EPOCH);
  }

  get groups(): '*' | Set<string> {
    return this.QUNLI_GROUPS === '*' ? '*' : new Set(this.QUNLI_GROUPS.split(','));
  }

  /** Configured bot owners (`QUNLI_OWNERS`). */
  get owners(): Set<string> {
    return new Set(this.QUNLI_OWNERS.split(',').filter((id) => id.length > 0));
  }

  get otherBots(): Set<string> {
    return new Set(this.QUNLI_OTHER_BOTS.split(',').filter((id) => id.length > 0));
  }

  get commandPrefixes(): string[] {
    return this.QUNLI_COMMAND_PREFIXES.split(',')
      .map((p) => p.trim())
      .filter((p) => p.length > 0);
  }

  get nicknames(): string[] {
    return this.QUNLI_NICKNAMES.split(',')
      .map((n) => n.trim())
      .filter((n) => n.length > 0);
  }

  /** Fact categories that may appear in another group's prompt (ADR-0016). */
  get memorySharedCategories(): Set<string> {
    return new Set(this.QUNLI_MEMORY_SHARED_CATEGORIES.split(',').filter((c) => c.length > 0));
  }

  /** The labelled offline responder is used when no API key is configured. */
  get llmOffline(): boolean {
    return !this.OPENAI_API_KEY;
  }

  portOf(app: AppName): number {
    switch (app) {
      case 'ingress':
        return this.INGRESS_PORT;
      case 'scheduler':
        return this.SCHEDULER_PORT;
      case 'cognition':
        return this.COGNITION_PORT;
      case 'outbound':
        return this.OUTBOUND_PORT;
      case 'life-director':
        return this.LIFE_DIRECTOR_PORT;
      case 'tool':
        return 0;
    }
  }
}

const NUMERIC_KEYS = new Set<string>();
const KNOWN_KEYS = new Set<string>();
{
  const probe = new QunliConfig();
  for (const key of Object.keys(probe)) {
    KNOWN_KEYS.add(key);
    if (typeof (probe as unknown as Record<string, unknown>)[key] === 'number') NUMERIC_KEYS.add(key);
  }
  for (const key of [
    'OPENAI_BASE_URL',
    'OPENAI_API_KEY',
    'QUNLI_SELF_ID',
    'ONEBOT_ACCESS_TOKEN',
    'ONEBOT_SECRET',
    'ONEBOT_HTTP_API_URL',
    'ONEBOT_WS_URL',
    'QUNLI_CONFIG',
    'QUNLI_TIME_EPOCH',
    'QUNLI_STICKERS',
    'QUNLI_MCP_SERVERS',
    'QUNLI_LLM_TIMEOUT_PLANNER_MS',
    'QUNLI_LLM_TIMEOUT_REPLYER_MS',
    'QUNLI_LLM_TIMEOUT_UTILS_MS',
  ]) {
    KNOWN_KEYS.add(key);
  }
  for (const key of ['QUNLI_LLM_TIMEOUT_PLANNER_MS', 'QUNLI_LLM_TIMEOUT_REPLYER_MS', 'QUNLI_LLM_TIMEOUT_UTILS_MS']) {
    NUMERIC_KEYS.add(key);
  }
}

/** Every setting name (environment variable / `qunli.yaml` key) the runtime understands. */
export const SETTING_NAMES: ReadonlySet<string> = KNOWN_KEYS;

/** Settings an app cannot run without, beyond the ones with defaults. */
const REQUIRED_BY_APP: Partial<Record<AppName, (keyof QunliConfig)[]>> = {};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

function closest(key: string): string | undefined {
  let best: string | undefined;
  let bestDistance = 4;
  for (const known of KNOWN_KEYS) {
    const d = editDistance(key, known);
    if (d < bestDistance) {
      best = known;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

/** YAML may give numbers, booleans or (wrongly) mappings; settings are text until validated (5 → "5"). */
function settingText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function unknownKey(key: string, where: string): string {
  const hint = closest(key);
  return `unknown setting ${key} in ${where}${hint ? ` (did you mean ${hint}?)` : ''}`;
}

function readFile(path: string, problems: string[]): Record<string, unknown> {
  try {
    const parsed: unknown = parseYaml(readFileSync(path, 'utf8'));
    if (parsed === null || parsed === undefined) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) {
      problems.push(`${path} must hold a mapping of SETTING: value`);
      return {};
    }
    return parsed as Record<string, unknown>;
  } catch (error) {
    problems.push(`${path} could not be read: ${(error as Error).message}`);
    return {};
  }
}

export interface LoadConfigOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** Settings that hold a URL with a possible password, shown masked when refused. */
const URL_SETTINGS = new Set(['REDIS_URL', 'DATABASE_URL']);

/** `scheme://user:secret@host` → `scheme://user:***@host`; anything else as it is. */
function maskedPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, '$1***@');
}

/**
 * `DATABASE_URL` as TypeORM and pg will read it: a URL whose credentials and database name decode. Without this check
 * a malformed `%`-escape reached TypeORM, which retried ten times, 3 s apart, on a bare `URIError`. The value is not
 * repeated: it may carry a password.
 */
function databaseUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'DATABASE_URL is not a valid URL (postgres://user:password@host:5432/database)';
  }
  try {
    for (const part of [parsed.username, parsed.password, parsed.hostname, parsed.pathname]) decodeURIComponent(part);
  } catch {
    return 'DATABASE_URL has a malformed %-escape (write a % in a password as %25)';
  }
  return undefined;
}

/**
 * Read, merge and validate the configuration for one app. Throws `ConfigError` naming every bad or unknown
 * setting at once, so a person fixes them in one go.
 */
export function loadConfig(app: AppName, options: LoadConfigOptions = {}): QunliConfig {
  const env = options.env ?? process.env;
  const problems: string[] = [];
  const raw: Record<string, unknown> = {};

  const filePath = env.QUNLI_CONFIG ?? `${options.cwd ?? process.cwd()}/qunli.yaml`;
  if (env.QUNLI_CONFIG !== undefined && !existsSync(filePath)) {
    problems.push(`QUNLI_CONFIG points at ${filePath}, which does not exist`);
  } else if (existsSync(filePath)) {
    for (const [key, value] of Object.entries(readFile(filePath, problems))) {
      if (!KNOWN_KEYS.has(key)) problems.push(unknownKey(key, filePath));
      else raw[key] = value === null ? undefined : settingText(value);
    }
  }

  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || value === '') continue;
    if (KNOWN_KEYS.has(key)) raw[key] = value;
    else if (key.startsWith('QUNLI_')) problems.push(unknownKey(key, 'the environment'));
  }

  const converted: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (NUMERIC_KEYS.has(key)) {
      const text = settingText(value).trim();
      const number = text === '' ? Number.NaN : Number(text);
      if (Number.isNaN(number)) {
        problems.push(`${key} must be a number (got ${JSON.stringify(value)})`);
        continue;
      }
      converted[key] = number;
    } else {
      converted[key] = settingText(value);
    }
  }

  const config = plainToInstance(QunliConfig, converted, { exposeDefaultValues: true });
  for (const error of validateSync(config)) {
    const value = converted[error.property] ?? null;
    // A URL setting may carry a password: it is shown masked.
    const shown = JSON.stringify(
      URL_SETTINGS.has(error.property) && typeof value === 'string' ? maskedPassword(value) : value,
    );
    const reasons = Object.values(error.constraints ?? {}).join(', ');
    problems.push(`${error.property} ${reasons} (got ${shown})`);
  }
  if (!problems.some((problem) => problem.startsWith('REDIS_URL '))) {
    try {
      redisTarget(config.REDIS_URL);
    } catch (error) {
      // The value is not repeated: it may carry a password.
      problems.push((error as Error).message);
    }
  }
  if (!problems.some((problem) => problem.startsWith('DATABASE_URL '))) {
    const problem = databaseUrlProblem(config.DATABASE_URL);
    if (problem) problems.push(problem);
  }
  if (config.QUNLI_TIME_SCALE !== 1 && config.QUNLI_TIME_EPOCH === undefined) {
    problems.push(
      `QUNLI_TIME_EPOCH is required when QUNLI_TIME_SCALE is ${config.QUNLI_TIME_SCALE} (an ISO time every app is given, e.g. the replay's start)`,
    );
  }
  if (config.QUNLI_SEND_TRANSPORT === 'http' && config.ONEBOT_HTTP_API_URL === undefined) {
    problems.push('ONEBOT_HTTP_API_URL is required when QUNLI_SEND_TRANSPORT is http');
  }
  if (config.QUNLI_SEND_TRANSPORT === 'ws_forward' && config.ONEBOT_WS_URL === undefined) {
    problems.push('ONEBOT_WS_URL is required when QUNLI_SEND_TRANSPORT is ws_forward');
  }
  for (const key of REQUIRED_BY_APP[app] ?? []) {
    if (config[key] === undefined) problems.push(`${key} is required by ${app}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
