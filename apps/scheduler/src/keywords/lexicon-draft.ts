import { createHash } from 'node:crypto';
import { EventKind, makeEvent, type EventEnvelope } from '@app/contracts';
import {
  parseSetKey,
  REMOVING_CHANGES,
  setKeyOf,
  termIdOf,
  type LexiconTerm,
  type SetRef,
  type TermDecision,
} from './lexicon.rules.js';

/*
 * The keyword sets one event touches, loaded, with the rules' decisions applied in memory; then one commit: each
 * changed set moves to its next version, and every change becomes a `keyword.term.changed` event plus one
 * `keyword.lexicon.versioned` per set. Event ids are derived from the cause, the term and the change, so an event
 * handled again after a crash (before the state committed) appends the same ids and the projector archives them
 * once.
 */

export interface SetMeta {
  version: number;
  /** Product ms of the set's last maintenance (decay, expiry, caps). */
  maintainedAt: number;
  updatedAt: number;
}

export interface LoadedSet {
  ref: SetRef;
  meta: SetMeta | null;
  terms: Map<string, LexiconTerm>;
}

export interface SetWrite {
  setKey: string;
  ref: SetRef;
  meta: SetMeta;
  upserts: LexiconTerm[];
  removals: string[];
  /** Terms that can hit after the commit. */
  live: number;
  changed: boolean;
}

export interface DraftCommit {
  sets: SetWrite[];
  changes: { setKey: string; version: number; decision: TermDecision }[];
}

export class LexiconDraft {
  private readonly changes = new Map<string, TermDecision[]>();
  private readonly maintained = new Map<string, number>();
  private readonly sets: Map<string, LoadedSet>;
  /** Sets whose terms this draft has copied: the loaded sets are never changed, so a batch can drop a draft. */
  private readonly copied = new Set<string>();

  constructor(sets: ReadonlyMap<string, LoadedSet>) {
    this.sets = new Map(sets);
  }

  static empty(refs: readonly SetRef[]): LexiconDraft {
    return new LexiconDraft(new Map(refs.map((ref) => [setKeyOf(ref), { ref, meta: null, terms: new Map() }])));
  }

  has(setKey: string): boolean {
    return this.sets.has(setKey);
  }

  /** The term with this text in the set, if it holds one. */
  term(ref: SetRef, text: string): LexiconTerm | undefined {
    return this.set(setKeyOf(ref)).terms.get(termIdOf(ref, text));
  }

  termById(setKey: string, termId: string): LexiconTerm | undefined {
    return this.sets.get(setKey)?.terms.get(termId);
  }

  terms(ref: SetRef): LexiconTerm[] {
    return [...this.set(setKeyOf(ref)).terms.values()];
  }

  maintainedAt(ref: SetRef): number | null {
    return this.set(setKeyOf(ref)).meta?.maintainedAt ?? null;
  }

  markMaintained(ref: SetRef, now: number): void {
    this.maintained.set(setKeyOf(ref), now);
  }

  apply(decision: TermDecision | null): void {
    if (!decision) return;
    const setKey = setKeyOf(decision.term);
    const set = this.writable(setKey);
    if (REMOVING_CHANGES.has(decision.change)) set.terms.delete(decision.term.termId);
    else set.terms.set(decision.term.termId, decision.term);
    this.changes.set(setKey, [...(this.changes.get(setKey) ?? []), decision]);
  }

  applyAll(decisions: readonly (TermDecision | null)[]): void {
    for (const d of decisions) this.apply(d);
  }

  get changed(): boolean {
    return this.changes.size > 0 || this.maintained.size > 0;
  }

  commit(now: number): DraftCommit {
    const sets: SetWrite[] = [];
    const changes: DraftCommit['changes'] = [];
    for (const [setKey, set] of this.sets) {
      const decisions = this.changes.get(setKey) ?? [];
      const maintainedAt = this.maintained.get(setKey);
      if (decisions.length === 0 && maintainedAt === undefined) continue;
      const previous = set.meta ?? { version: 0, maintainedAt: now, updatedAt: now };
      const version = decisions.length > 0 ? previous.version + 1 : previous.version;
      const meta: SetMeta = {
        version,
        maintainedAt: maintainedAt ?? previous.maintainedAt,
        updatedAt: decisions.length > 0 ? now : previous.updatedAt,
      };
      const removals = new Set<string>();
      const upserts = new Map<string, LexiconTerm>();
      for (const d of decisions) {
        if (REMOVING_CHANGES.has(d.change)) {
          upserts.delete(d.term.termId);
          removals.add(d.term.termId);
        } else {
          removals.delete(d.term.termId);
          upserts.set(d.term.termId, d.term);
        }
        changes.push({ setKey, version, decision: d });
      }
      const live = [...set.terms.values()].filter((t) => t.status !== 'suppressed').length;
      sets.push({
        setKey,
        ref: set.ref,
        meta,
        upserts: [...upserts.values()],
        removals: [...removals],
        live,
        changed: decisions.length > 0,
      });
    }
    return { sets, changes };
  }

  /** The set as this draft left it (its terms after the decisions applied); undefined if it holds no such set. */
  loaded(setKey: string): LoadedSet | undefined {
    return this.sets.get(setKey);
  }

  private writable(setKey: string): LoadedSet {
    const set = this.set(setKey);
    if (this.copied.has(setKey)) return set;
    const copy = { ...set, terms: new Map(set.terms) };
    this.sets.set(setKey, copy);
    this.copied.add(setKey);
    return copy;
  }

  private set(setKey: string): LoadedSet {
    let set = this.sets.get(setKey);
    if (!set) {
      set = { ref: parseSetKey(setKey), meta: null, terms: new Map() };
      this.sets.set(setKey, set);
    }
    return set;
  }
}

/** The group a set's events belong to (its partition): the group of a group or thread set, else none. */
export function groupOfSet(ref: SetRef): string | null {
  if (ref.scope === 'group') return ref.ownerId;
  if (ref.scope === 'thread') return ref.ownerId.slice(0, ref.ownerId.indexOf('/'));
  return null;
}

function derivedId(...parts: string[]): string {
  return `kw_${createHash('sha256').update(parts.join('|')).digest('hex').slice(0, 32)}`;
}

/** The log's record of a commit: every term change, then each changed set's new version. */
export function keywordEvents(
  commit: DraftCommit,
  causeId: string,
  cause: EventEnvelope | undefined,
  now: number,
): EventEnvelope[] {
  const createdAt = new Date(now);
  const events: EventEnvelope[] = [];
  commit.changes.forEach(({ version, decision }, i) => {
    const t = decision.term;
    events.push(
      makeEvent({
        kind: EventKind.KeywordTermChanged,
        id: derivedId(causeId, t.termId, decision.change, String(version), String(i)),
        groupId: groupOfSet(t),
        source: 'scheduler',
        createdAt,
        ...(cause ? { cause } : {}),
        payload: {
          termId: t.termId,
          scope: t.scope,
          ownerId: t.ownerId,
          change: decision.change,
          text: t.text,
          aliases: t.aliases,
          weight: t.weight,
          confidence: t.confidence,
          source: t.source,
          status: t.status,
          sightings: t.sightings,
          firstSeenAt: new Date(t.firstSeenAt).toISOString(),
          lastSeenAt: new Date(t.lastSeenAt).toISOString(),
          ...(t.expiresAt !== null ? { expiresAt: new Date(t.expiresAt).toISOString() } : {}),
          version,
          reason: decision.reason.slice(0, 200),
        },
      }),
    );
  });
  for (const set of commit.sets) {
    if (!set.changed) continue;
    events.push(
      makeEvent({
        kind: EventKind.KeywordLexiconVersioned,
        id: derivedId(causeId, set.setKey, String(set.meta.version)),
        groupId: groupOfSet(set.ref),
        source: 'scheduler',
        createdAt,
        ...(cause ? { cause } : {}),
        payload: {
          scope: set.ref.scope,
          ownerId: set.ref.ownerId,
          version: set.meta.version,
          terms: set.live,
          changedTermIds: [
            ...new Set(commit.changes.filter((c) => c.setKey === set.setKey).map((c) => c.decision.term.termId)),
          ],
        },
      }),
    );
  }
  return events;
}
