import { EventKind, type EventEnvelope, type EventOf, type KeywordControlRequestedPayload } from '@app/contracts';
import { AGE_AFTER, agePool, wordTable, type CandidatePool, type CandidateWord } from './candidate-pool.rules.js';
import { candidateWords } from './candidate-extraction.js';
import { KeywordError, KeywordErrorCode } from './keyword.errors.js';
import { emptyFeedback, followFeedback, type FeedbackInput, type FeedbackState } from './keyword-feedback.rules.js';
import {
  applyControl,
  applyFeedback,
  groupSet,
  learnFromMessage,
  learnFromSummary,
  learnJargon,
  maintainIfDue,
  threadSet,
} from './keyword-learning.js';
import { keywordEvents, LexiconDraft, type DraftCommit, type LoadedSet, type SetMeta } from './lexicon-draft.js';
import { setKeyOf, setRef, type LexiconPolicy, type LexiconTerm } from './lexicon.rules.js';

/*
 * A batch of one partition's events learned together (ADR 0029): the batch reads, in a few round trips, everything
 * its events need (done markers, the groups' feedback and candidate pools, the sets, the term index), then folds
 * the events in log order over that state in memory — each event over a draft of the state as the events before it
 * left it, with the same rules, in the same order, as if each had been committed on its own — and gathers one
 * commit: every set's net change and final meta, each event's version announcements, the groups' feedback and
 * pools, the done markers and the derived `keyword.*` events. What one-at-a-time handling would have written, and
 * nothing else.
 */

/** The kinds the lexicon learns from; the rest of the log passes by. */
export const LEARNS_FROM: ReadonlySet<string> = new Set([
  EventKind.MessageObserved,
  EventKind.MessageDirect,
  EventKind.MemorySummaryWritten,
  EventKind.MemoryJargonLearned,
  EventKind.DecisionMade,
  EventKind.ActionSend,
  EventKind.EpisodeCompleted,
  EventKind.KeywordControlRequested,
]);

/** What one event is to the lexicon, worked out once (a message's candidate words are cut here). */
export interface LearningInput {
  event: EventEnvelope;
  groupId: string | null;
  /** A group message someone (not the bot) said: what the pool counts. */
  message: { senderId: string; words: string[] } | null;
  feedback: FeedbackInput | null;
  control: KeywordControlRequestedPayload | null;
  /** A thread summary of a group. */
  summary: { threadId: string; words: string[] } | null;
  /** Jargon memory learned in a group. */
  jargon: { term: string; meaning: string } | null;
}

export function learningInput(event: EventEnvelope): LearningInput {
  const groupId = event.groupId;
  const input: LearningInput = {
    event,
    groupId,
    message: null,
    feedback: null,
    control: null,
    summary: null,
    jargon: null,
  };
  const kind = event.kind;
  if (kind === EventKind.MessageObserved || kind === EventKind.MessageDirect) {
    const p = (event as EventOf<'message.observed'>).payload;
    if (p.sender.userId !== p.selfId) {
      input.feedback = { type: 'message', eventId: event.id, senderId: p.sender.userId };
      if (groupId && p.messageType === 'group') {
        input.message = { senderId: p.sender.userId, words: candidateWords(p.text) };
      }
    }
  } else if (kind === EventKind.DecisionMade) {
    const p = (event as EventOf<'decision.made'>).payload;
    input.feedback = {
      type: 'decision',
      subjectEventId: p.subjectEventId,
      outcome: p.outcome,
      hits: p.keywordHits ?? [],
    };
  } else if (kind === EventKind.ActionSend) {
    input.feedback = { type: 'replied', triggerEventId: (event as EventOf<'action.send'>).payload.triggerEventId };
  } else if (kind === EventKind.EpisodeCompleted) {
    const p = (event as EventOf<'episode.completed'>).payload;
    input.feedback = { type: 'completed', triggerEventId: p.triggerEventId, outcome: p.outcome };
  } else if (kind === EventKind.KeywordControlRequested) {
    input.control = (event as EventOf<'keyword.control.requested'>).payload;
  } else if (kind === EventKind.MemorySummaryWritten && groupId) {
    const p = (event as EventOf<'memory.summary.written'>).payload;
    input.summary = { threadId: p.threadId, words: candidateWords(p.summary, 6) };
  } else if (kind === EventKind.MemoryJargonLearned && groupId) {
    const p = (event as EventOf<'memory.jargon.learned'>).payload;
    if (p.status === 'learned') input.jargon = { term: p.term, meaning: p.meaning };
  }
  return input;
}

/** What a batch still has to read before it can fold its events (empty lists: nothing of that kind). */
export interface LexiconReads {
  doneIds: string[];
  feedbackGroups: string[];
  setKeys: string[];
  /** Per group: the candidate words to read (the total always comes along), or `'whole'` to read the pool whole. */
  pools: Map<string, string[] | 'whole'>;
  termIds: string[];
}

/** What the store read for a batch, answering `LexiconReads` key for key. */
export interface LexiconRead {
  /** Every id asked about: whether its done marker is set. */
  done: Map<string, boolean>;
  /** null: the group has no feedback in progress. */
  feedback: Map<string, FeedbackState | null>;
  /** Every set asked for (a set no one has written yet: meta null, no terms). */
  sets: Map<string, LoadedSet>;
  /** Per group: the total, and the words asked for that the pool holds (all of them, for `'whole'`). */
  pools: Map<string, { totalDocs: number; words: Map<string, CandidateWord>; asked: string[] | 'whole' }>;
  /** Every term id asked about: the set holding it, or null. */
  index: Map<string, string | null>;
}

/** One commit for the whole batch: what one-at-a-time handling would have written, netted per key. */
export interface LexiconWrites {
  sets: {
    setKey: string;
    /** The version the set was read at: the commit writes nothing if another process moved it since. */
    expected: number;
    meta: SetMeta;
    upserts: LexiconTerm[];
    removals: string[];
  }[];
  /** One announcement per event that changed a set, in log order. */
  versions: { setKey: string; version: number }[];
  feedback: { groupId: string; state: FeedbackState }[];
  /** `replace`: the pool was aged, `words` is all of it; else `words` are the words that changed. */
  pools: { groupId: string; totalDocs: number; words: [string, CandidateWord][]; replace: boolean }[];
  /** Events that changed something, or were refused. */
  done: string[];
  events: EventEnvelope[];
}

/** A refused event: counted and logged once the batch has committed. */
export interface Refusal {
  event: EventEnvelope;
  error: KeywordError;
}

interface WorkingFeedback {
  state: FeedbackState | null;
  /** `state` (or the empty state) as JSON, once asked for. */
  json: string | undefined;
  moved: boolean;
}

interface WorkingPool {
  totalDocs: number;
  words: Map<string, CandidateWord>;
  /** Words whose value (or absence) is known; null: the whole pool is here. */
  read: Set<string> | null;
  changed: Set<string>;
  /** Aged in this batch: written whole. */
  replaced: boolean;
  moved: boolean;
}

interface SetChanges {
  upserts: Map<string, LexiconTerm>;
  removals: Set<string>;
}

export type LearnOutcome = 'done-already' | 'unchanged' | 'changed' | 'refused';

export class LearningBatch {
  private readonly checked = new Map<string, boolean>();
  private readonly feedback = new Map<string, WorkingFeedback>();
  private readonly sets = new Map<string, LoadedSet>();
  private readonly expected = new Map<string, number>();
  private readonly pools = new Map<string, WorkingPool>();
  private readonly index = new Map<string, string | null>();

  private readonly setChanges = new Map<string, SetChanges>();
  private readonly versions: LexiconWrites['versions'] = [];
  private readonly doneIds: string[] = [];
  private readonly events: EventEnvelope[] = [];
  /** Every term change committed, for the metrics. */
  readonly changes: DraftCommit['changes'] = [];
  readonly refusals: Refusal[] = [];

  constructor(
    private readonly inputs: readonly LearningInput[],
    private readonly policy: LexiconPolicy,
  ) {}

  /**
   * What is still to be read, or null when the batch can fold. The first answer is what the events name; the next
   * what the first read revealed (the term ids of feedback in progress, the sets holding looked-up terms, a pool
   * about to age); the third at most the sets of those terms. A constant number of round trips, whatever the size.
   */
  readsNeeded(): LexiconReads | null {
    const pools = new Map<string, string[] | 'whole'>();
    const wantDone = new Set<string>();
    const wantFeedback = new Set<string>();
    const wantSet = new Set<string>();
    const wantTerm = new Set<string>();
    const wantSetKey = (key: string) => {
      if (!this.sets.has(key)) wantSet.add(key);
    };
    const wantTermId = (id: string) => {
      if (!this.index.has(id)) wantTerm.add(id);
      else {
        const holder = this.index.get(id);
        if (holder) wantSetKey(holder);
      }
    };
    const messages = new Map<string, string[][]>();
    for (const input of this.inputs) {
      const { event, groupId } = input;
      if (!this.checked.has(event.id)) wantDone.add(event.id);
      if (groupId) {
        if (!this.feedback.has(groupId)) wantFeedback.add(groupId);
        wantSetKey(setKeyOf(groupSet(groupId)));
      }
      if (input.feedback?.type === 'decision') for (const hit of input.feedback.hits) wantTermId(hit.termId);
      if (input.control) {
        const key = controlSetKey(input.control);
        if (key) wantSetKey(key);
      }
      if (input.summary && groupId) wantSetKey(setKeyOf(threadSet(groupId, input.summary.threadId)));
      if (input.message && groupId) {
        const said = messages.get(groupId);
        if (said) said.push(input.message.words);
        else messages.set(groupId, [input.message.words]);
      }
    }
    for (const state of this.feedback.values()) {
      for (const pending of Object.values(state.state?.pending ?? {})) {
        for (const hit of pending.hits) wantTermId(hit.termId);
      }
    }
    for (const [groupId, said] of messages) {
      const pool = this.pools.get(groupId);
      if (pool?.read === null) continue;
      // Each message counts one: a pool that will pass the aging mark in this batch is read whole.
      if (pool && pool.totalDocs + said.length > AGE_AFTER) {
        pools.set(groupId, 'whole');
        continue;
      }
      const missing = new Set<string>();
      for (const words of said) for (const word of words) if (!pool?.read?.has(word)) missing.add(word);
      if (!pool || missing.size > 0) pools.set(groupId, [...missing]);
    }
    const empty =
      wantDone.size === 0 && wantFeedback.size === 0 && wantSet.size === 0 && pools.size === 0 && wantTerm.size === 0;
    if (empty) return null;
    return {
      doneIds: [...wantDone],
      feedbackGroups: [...wantFeedback],
      setKeys: [...wantSet],
      pools,
      termIds: [...wantTerm],
    };
  }

  absorb(read: LexiconRead): void {
    for (const [id, done] of read.done) this.checked.set(id, done);
    for (const [groupId, state] of read.feedback) this.feedback.set(groupId, { state, json: undefined, moved: false });
    for (const [key, set] of read.sets) {
      this.sets.set(key, set);
      this.expected.set(key, set.meta?.version ?? 0);
    }
    for (const [id, holder] of read.index) this.index.set(id, holder);
    for (const [groupId, pool] of read.pools) {
      const working = this.pools.get(groupId);
      if (!working || pool.asked === 'whole') {
        this.pools.set(groupId, {
          totalDocs: pool.totalDocs,
          words: new Map(pool.words),
          read: pool.asked === 'whole' ? null : new Set(pool.asked),
          changed: new Set(),
          replaced: false,
          moved: false,
        });
        continue;
      }
      working.totalDocs = pool.totalDocs;
      for (const word of pool.asked) {
        working.read?.add(word);
        const value = pool.words.get(word);
        if (value) working.words.set(word, value);
        else working.words.delete(word);
      }
    }
  }

  isDone(eventId: string): boolean {
    const done = this.checked.get(eventId);
    if (done === undefined) throw new Error(`keyword batch: the done marker of ${eventId} was not read`);
    return done;
  }

  /**
   * Learn one event at `now`, over the state the batch's earlier events left: exactly what handling it alone, after
   * committing those, would have decided. A refused event (`KeywordError`) changes nothing but its done marker.
   */
  learn(input: LearningInput, now: number): LearnOutcome {
    const { event, groupId } = input;
    if (this.isDone(event.id)) return 'done-already';
    const feedbackState = groupId ? this.workingFeedback(groupId) : undefined;
    const feedback = feedbackState?.state ?? null;

    // Feedback first: it says which terms (in which sets) the event settles.
    const followed =
      groupId && input.feedback
        ? followFeedback(feedback ?? emptyFeedback(), input.feedback, now)
        : { state: feedback, outcomes: [] };
    const termSets = new Map<string, string>();
    for (const id of new Set(followed.outcomes.flatMap((o) => o.hits.map((h) => h.termId)))) {
      if (!this.index.has(id)) throw new Error(`keyword batch: term ${id} was not looked up`);
      const holder = this.index.get(id);
      if (holder) termSets.set(id, holder);
    }
    // The sets in the order handling the event alone loads them: its group's, the feedback's, the command's, the
    // thread's. The order decides the order of its changes, and so its derived event ids.
    const groupKey = groupId ? setKeyOf(groupSet(groupId)) : undefined;
    const keys: string[] = [...termSets.values()];
    if (input.control) {
      try {
        keys.push(setKeyOf(setRef(input.control.scope, input.control.ownerId)));
      } catch (error) {
        return this.refuse(event, error);
      }
    }
    if (input.summary && groupId) keys.push(setKeyOf(threadSet(groupId, input.summary.threadId)));
    const order = [...new Set(groupKey ? [groupKey, ...keys] : keys)];
    const draft = new LexiconDraft(new Map(order.map((key) => [key, this.loadedSet(key)])));

    let pool: { words: CandidatePool; replace: boolean } | undefined;
    try {
      for (const outcome of followed.outcomes) {
        applyFeedback(draft, outcome.hits, outcome.signal, (id) => termSets.get(id), now, this.policy);
      }
      if (input.message && groupId) {
        const { senderId, words } = input.message;
        const learned = learnFromMessage(
          draft,
          this.poolWords(groupId, words),
          { groupId, senderId, words },
          now,
          this.policy,
        );
        pool = { words: learned.pool, replace: false };
        if (learned.needsAging) {
          pool = {
            words: agePool({
              totalDocs: learned.pool.totalDocs,
              words: wordTable(this.wholePool(groupId), learned.pool.words),
            }),
            replace: true,
          };
        }
        maintainIfDue(draft, groupSet(groupId), now, this.policy);
      } else if (input.summary && groupId) {
        const { threadId, words } = input.summary;
        learnFromSummary(draft, { groupId, threadId, words }, now, this.policy);
        maintainIfDue(draft, threadSet(groupId, threadId), now, this.policy);
      } else if (input.jargon && groupId) {
        learnJargon(draft, { groupId, ...input.jargon }, now, this.policy);
      } else if (input.control) {
        const c = input.control;
        const command = {
          command: c.command,
          term: c.term,
          requestedBy: c.requestedBy,
          ...(c.aliases ? { aliases: c.aliases } : {}),
          ...(c.weight !== undefined ? { weight: c.weight } : {}),
        };
        applyControl(draft, { scope: c.scope, ownerId: c.ownerId, command }, now, this.policy);
      }
    } catch (error) {
      return this.refuse(event, error);
    }

    const commit = draft.commit(now);
    let followedJson: string | undefined;
    const feedbackMoved =
      input.feedback !== null &&
      followed.state !== null &&
      (followedJson = JSON.stringify(followed.state)) !== this.feedbackJson(feedbackState!);
    // Most decisions, sends and completions carry no keyword hits: nothing to write, nor to remember as done
    // (handled again, they change nothing either).
    if (commit.sets.length === 0 && !feedbackMoved && pool === undefined) return 'unchanged';

    for (const write of commit.sets) {
      const after = draft.loaded(write.setKey)!;
      this.sets.set(write.setKey, { ref: after.ref, meta: write.meta, terms: after.terms });
      const changes = this.setChangesOf(write.setKey);
      for (const term of write.upserts) {
        changes.removals.delete(term.termId);
        changes.upserts.set(term.termId, term);
        this.index.set(term.termId, write.setKey);
      }
      for (const id of write.removals) {
        changes.upserts.delete(id);
        changes.removals.add(id);
        this.index.set(id, null);
      }
      if (write.changed) this.versions.push({ setKey: write.setKey, version: write.meta.version });
    }
    if (feedbackMoved) {
      feedbackState!.state = followed.state;
      feedbackState!.json = followedJson;
      feedbackState!.moved = true;
    }
    if (pool && groupId) this.keepPool(groupId, pool);
    this.markDone(event.id);
    this.events.push(...keywordEvents(commit, event.id, event, now));
    this.changes.push(...commit.changes);
    return 'changed';
  }

  /** The batch's one commit, or null when no event changed anything. */
  writes(): LexiconWrites | null {
    if (this.doneIds.length === 0) return null;
    const sets: LexiconWrites['sets'] = [];
    for (const [setKey, changes] of this.setChanges) {
      sets.push({
        setKey,
        expected: this.expected.get(setKey) ?? 0,
        meta: this.sets.get(setKey)!.meta!,
        upserts: [...changes.upserts.values()],
        removals: [...changes.removals],
      });
    }
    const feedback: LexiconWrites['feedback'] = [];
    for (const [groupId, state] of this.feedback) {
      if (state.moved && state.state) feedback.push({ groupId, state: state.state });
    }
    const pools: LexiconWrites['pools'] = [];
    for (const [groupId, pool] of this.pools) {
      if (!pool.moved) continue;
      const words = pool.replaced
        ? [...pool.words]
        : [...pool.changed].map((word): [string, CandidateWord] => [word, pool.words.get(word)!]);
      pools.push({ groupId, totalDocs: pool.totalDocs, words, replace: pool.replaced });
    }
    return { sets, versions: this.versions, feedback, pools, done: this.doneIds, events: this.events };
  }

  private refuse(event: EventEnvelope, error: unknown): LearnOutcome {
    if (!(error instanceof KeywordError) || error.code === KeywordErrorCode.Conflict) throw error;
    this.refusals.push({ event, error });
    this.markDone(event.id);
    return 'refused';
  }

  private markDone(eventId: string): void {
    this.checked.set(eventId, true);
    this.doneIds.push(eventId);
  }

  private workingFeedback(groupId: string): WorkingFeedback {
    const state = this.feedback.get(groupId);
    if (!state) throw new Error(`keyword batch: the feedback of group ${groupId} was not read`);
    return state;
  }

  private feedbackJson(state: WorkingFeedback): string {
    return (state.json ??= JSON.stringify(state.state ?? emptyFeedback()));
  }

  private loadedSet(key: string): LoadedSet {
    const set = this.sets.get(key);
    if (!set) throw new Error(`keyword batch: set ${key} was not read`);
    return set;
  }

  private setChangesOf(setKey: string): SetChanges {
    let changes = this.setChanges.get(setKey);
    if (!changes) {
      changes = { upserts: new Map(), removals: new Set() };
      this.setChanges.set(setKey, changes);
    }
    return changes;
  }

  private workingPool(groupId: string): WorkingPool {
    const pool = this.pools.get(groupId);
    if (!pool) throw new Error(`keyword batch: the pool of group ${groupId} was not read`);
    return pool;
  }

  /** The pool as far as these words go, and its total: what reading them alone would have returned. */
  private poolWords(groupId: string, words: readonly string[]): CandidatePool {
    const working = this.workingPool(groupId);
    const pool: CandidatePool = { totalDocs: working.totalDocs, words: wordTable() };
    for (const word of words) {
      if (working.read && !working.read.has(word)) throw new Error(`keyword batch: pool word ${word} was not read`);
      const value = working.words.get(word);
      if (value) pool.words[word] = value;
    }
    return pool;
  }

  private wholePool(groupId: string): CandidatePool['words'] {
    const working = this.workingPool(groupId);
    if (working.read !== null) throw new Error(`keyword batch: the pool of group ${groupId} was not read whole`);
    return wordTable(working.words);
  }

  private keepPool(groupId: string, pool: { words: CandidatePool; replace: boolean }): void {
    const working = this.workingPool(groupId);
    working.totalDocs = pool.words.totalDocs;
    working.moved = true;
    if (pool.replace) {
      working.words = new Map(Object.entries(pool.words.words));
      working.read = null;
      working.replaced = true;
      return;
    }
    for (const [word, value] of Object.entries(pool.words.words)) {
      working.words.set(word, value);
      working.changed.add(word);
      working.read?.add(word);
    }
  }
}

/** The set a command names, or undefined for a bad scope (the event is refused when it is learned). */
function controlSetKey(control: KeywordControlRequestedPayload): string | undefined {
  try {
    return setKeyOf(setRef(control.scope, control.ownerId));
  } catch (error) {
    if (error instanceof KeywordError) return undefined;
    throw error;
  }
}
