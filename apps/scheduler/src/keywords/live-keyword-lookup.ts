import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { KeywordScope } from '@app/contracts';
import { Metrics, REDIS } from '@app/platform';
import { byStrength, CompiledSet } from './compiled-lexicon.js';
import type { KeywordContext, KeywordHit, KeywordLookup } from './keyword-lookup.js';
import { KeywordLexiconStore } from './keyword-lexicon.store.js';
import { parseSetKey, setKeyOf, type LexiconTerm } from './lexicon.rules.js';
import { normaliseText } from './text.normaliser.js';

/** Real ms an announcement read blocks; also how soon a stop is noticed. */
const FOLLOW_BLOCK_MS = 1000;
/** Real ms between full version checks, in case an announcement was trimmed away before this process read it. */
const RECONCILE_MS = 30_000;
const LOAD_CHUNK = 200;

/**
 * The scheduler's `KeywordLookup`: every keyword set compiled in memory, kept current by following the versions
 * stream (`Keyspace.keywordVersions`) on a connection of its own, so a version published by any process is visible
 * here within about a second. A set is recompiled when its version moves, never per message; `match` and
 * `versionFor` only read the compiled sets. The versions are the sets' own (from the Redis state), so every
 * replica reports the same `versionFor` once it has caught up.
 */
@Injectable()
export class LiveKeywordLookup implements KeywordLookup, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('keyword-lookup');
  private readonly compiled = new Map<string, CompiledSet>();
  private follower: Redis | undefined;
  private following: Promise<void> | undefined;
  private stopping = false;
  private lastId = '0-0';
  private lastReconcile = 0;
  private readonly rebuilds;
  private readonly terms;

  constructor(
    private readonly store: KeywordLexiconStore,
    @Inject(REDIS) private readonly redis: Redis,
    metrics: Metrics,
  ) {
    this.rebuilds = metrics.counter({
      name: 'qunli_keyword_matcher_rebuilds_total',
      help: 'Keyword sets recompiled because their version moved',
    });
    this.terms = metrics.gauge({ name: 'qunli_keyword_terms', help: 'Keyword terms compiled in this process' });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /** Load every set, then follow new versions. */
  async start(): Promise<void> {
    this.stopping = false;
    this.lastId = await this.store.lastAnnouncement();
    await this.reconcile();
    this.follower = this.redis.duplicate();
    this.following = this.follow();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.following;
    this.follower?.disconnect();
    this.follower = undefined;
  }

  versionFor(context: KeywordContext): string {
    let version = '';
    for (const key of visibleSets(context)) version += `${this.compiled.get(key)?.version ?? 0}.`;
    return version.slice(0, -1);
  }

  async catchUp(set: { scope: KeywordScope; ownerId: string; version: number }): Promise<void> {
    const key = setKeyOf({ scope: set.scope, ownerId: set.ownerId });
    if ((this.compiled.get(key)?.version ?? 0) < set.version) await this.reload([key]);
  }

  match(text: string, context: KeywordContext): KeywordHit[] {
    const hits: KeywordHit[] = [];
    const sets = visibleSets(context).map((key) => this.compiled.get(key));
    if (!sets.some((s) => s && s.size > 0)) return hits;
    const normalised = normaliseText(text);
    for (const set of sets) set?.matchInto(normalised, hits);
    return hits.sort(byStrength);
  }

  private async follow(): Promise<void> {
    while (!this.stopping) {
      try {
        const announced = await this.store.announcementsAfter(this.follower!, this.lastId, FOLLOW_BLOCK_MS);
        if (announced.length > 0) {
          this.lastId = announced[announced.length - 1]!.id;
          const stale = announced
            .filter((a) => (this.compiled.get(a.setKey)?.version ?? 0) < a.version)
            .map((a) => a.setKey);
          await this.reload([...new Set(stale)]);
        }
        if (Date.now() - this.lastReconcile >= RECONCILE_MS) await this.reconcile();
      } catch (error) {
        if (this.stopping) return;
        this.logger.warn({ message: 'keyword versions could not be read; retrying', error: String(error) });
        await new Promise((resolve) => setTimeout(resolve, FOLLOW_BLOCK_MS));
      }
    }
  }

  /** Compare every set's version with the compiled one and reload those that moved (or are new). */
  private async reconcile(): Promise<void> {
    this.lastReconcile = Date.now();
    const metas = await this.store.allSets();
    const stale = [...metas].filter(([key, meta]) => this.compiled.get(key)?.version !== meta.version).map(([k]) => k);
    await this.reload(stale);
  }

  private async reload(setKeys: readonly string[]): Promise<void> {
    for (let i = 0; i < setKeys.length; i += LOAD_CHUNK) {
      const loaded = await this.store.loadSets(setKeys.slice(i, i + LOAD_CHUNK));
      for (const [key, set] of loaded) {
        const version = set.meta?.version ?? 0;
        if ((this.compiled.get(key)?.version ?? -1) >= version && this.compiled.has(key)) continue;
        this.compiled.set(key, compileSet(key, version, [...set.terms.values()]));
        this.rebuilds.inc();
      }
    }
    let total = 0;
    for (const set of this.compiled.values()) total += set.size;
    this.terms.set(total);
  }
}

export function compileSet(setKey: string, version: number, terms: readonly LexiconTerm[]): CompiledSet {
  const ref = parseSetKey(setKey);
  const scopeId = ref.scope === 'thread' ? ref.ownerId.slice(ref.ownerId.indexOf('/') + 1) : ref.ownerId;
  return new CompiledSet(
    ref.scope,
    scopeId,
    version,
    terms
      .filter((t) => t.status !== 'suppressed')
      .map((t) => ({
        termId: t.termId,
        text: t.text,
        aliases: t.aliases,
        weight: t.weight,
        confidence: t.confidence,
        source: t.source,
      })),
  );
}

/**
 * The sets whose terms may hit a message in `context`, in a fixed order (the order of `versionFor`'s parts):
 * global, persona, group, thread, activity, game. A thread's set is keyed by its group too, so one group's thread
 * never sees another's.
 */
export function visibleSets(context: KeywordContext): string[] {
  const keys = ['global:'];
  if (context.personaId) keys.push(`persona:${context.personaId}`);
  if (context.groupId) {
    keys.push(`group:${context.groupId}`);
    if (context.threadId) keys.push(`thread:${context.groupId}/${context.threadId}`);
  }
  if (context.activityId) keys.push(`activity:${context.activityId}`);
  if (context.gameId) keys.push(`game:${context.gameId}`);
  return keys;
}
