import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { EventKind, Keyspace, type EventEnvelope } from '@app/contracts';
import {
  EventLog,
  passOverAfter,
  passOverArgument,
  passOverBefore,
  SEAL_FIELD,
  scriptWakes,
  wakeInScript,
  wireArg,
} from '@app/event-bus';
import { REDIS } from '@app/platform';
import type { EpisodeState } from './episode-state.js';

/** How long an episode's state (and its done marker) outlives its last step: longer than any redelivery. */
export const EPISODE_STATE_TTL_SECONDS = 7 * 86400;

// KEYS: state hash, partition stream, control record, done marker, acted marker.
// ARGV: expected rev, state JSON, ttl, acts ('1': refuse when the episode was stopped), final ('1': set done),
//       acted marker (non-empty when the commit holds an action.send: the JSON list of the event ids the episode's
//       replies covered), yield seq (non-empty: refuse when the control record's newest command is an interrupt
//       with a greater seq, and return the record), the wakes of the events (`scriptWakes`: channels, partition),
//       the groups to pass over (`passOverArgument`, ADR 0044), then kind/envelope/seal triples (the seal, ADR 0022,
//       spares every reader class-validator: the envelopes were validated here).
// Returns {1, newRev, control} committed (control: the control record as it was at the commit, or nil),
// {0, rev} someone else moved the episode on, {-1, rev} the episode was stopped, {-2, rev, control} yielded to an
// interrupt (nothing written).
const COMMIT = `
local rev = tonumber(redis.call('HGET', KEYS[1], 'rev') or '0')
if rev ~= tonumber(ARGV[1]) then return {0, rev} end
local control = redis.call('GET', KEYS[3])
local record = nil
if control then
  local ok, decoded = pcall(cjson.decode, control)
  if ok and type(decoded) == 'table' then record = decoded end
end
if ARGV[4] == '1' and record and record.stopped == true then return {-1, rev} end
if ARGV[7] ~= '' and record and record.stopped ~= true and type(record.latest) == 'table'
  and record.latest.command == 'interrupt' and tonumber(record.seq) and tonumber(record.seq) > tonumber(ARGV[7]) then
  return {-2, rev, control}
end
${passOverBefore('KEYS[2]', 'ARGV[10]')}
local last, appended = nil, 0
for i = 11, #ARGV, 3 do
  last = redis.call('XADD', KEYS[2], '*', 'k', ARGV[i], 'e', ARGV[i + 1], '${SEAL_FIELD}', ARGV[i + 2])
  appended = appended + 1
end
${passOverAfter('KEYS[2]', 'last', 'appended')}
${wakeInScript(8)}
redis.call('HSET', KEYS[1], 'rev', rev + 1, 'state', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if ARGV[5] == '1' then redis.call('SET', KEYS[4], '1', 'EX', ARGV[3]) end
if ARGV[6] ~= '' then redis.call('SET', KEYS[5], ARGV[6], 'EX', ARGV[3]) end
return {1, rev + 1, control}
`;

/**
 * `control`: the episode's control record (`EpisodeControlRecord` JSON) as the commit saw it, in the same atomic
 * step; null when it has none. `yielded`: the commit was asked to yield to a newer interrupt, and did.
 */
export type CommitResult =
  | { kind: 'committed'; rev: number; control: string | null }
  | { kind: 'conflict'; rev: number }
  | { kind: 'stopped' }
  | { kind: 'yielded'; control: string };

/**
 * An episode's persisted state and the events of each step, committed together in one Lua call on the episode's
 * partition (every key carries its hash tag): the step's events exist exactly when the state that follows them
 * does. The commit is fenced by a revision, so of two workers running the same episode (a stalled job handed to
 * another process while the first still runs) only one can record each step; and a commit that acts refuses
 * once the scheduler has stopped the episode (cancel / supersede), in the same atomic step, and otherwise sets the
 * episode's acted marker (`Keyspace.episodeActed`) the scheduler reads before it would supersede it. Every commit
 * returns the control record as it read it, so the runner needs no read of its own right after a commit; and a
 * commit given `yieldAfterSeq` writes nothing when the record's newest command is an interrupt after that seq.
 */
@Injectable()
export class EpisodeStateStore {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly eventLog: EventLog,
  ) {
    this.redis.defineCommand('qunliEpisodeCommit', { numberOfKeys: 5, lua: COMMIT });
  }

  async load(groupId: string | null, episodeId: string): Promise<{ state: EpisodeState; rev: number } | null> {
    const partition = this.keys.partitionOf(groupId);
    const [rev, json] = await this.redis.hmget(this.keys.episodeState(partition, episodeId), 'rev', 'state');
    return loaded(rev, json);
  }

  /**
   * `load` and `isDone` in one round trip (both keys carry the partition's hash tag): the persisted state, or
   * `done` when the episode has none and its done marker is set, or null when it is unknown.
   */
  async open(groupId: string | null, episodeId: string): Promise<{ state: EpisodeState; rev: number } | 'done' | null> {
    const partition = this.keys.partitionOf(groupId);
    const replies = await this.redis
      .pipeline()
      .hmget(this.keys.episodeState(partition, episodeId), 'rev', 'state')
      .exists(this.keys.episodeDone(partition, episodeId))
      .exec();
    const [[stateError, fields], [doneError, done]] = replies as [
      [Error | null, (string | null)[]],
      [Error | null, number],
    ];
    if (stateError) throw stateError;
    const found = loaded(fields[0], fields[1]);
    if (found) return found;
    if (doneError) throw doneError;
    return done === 1 ? 'done' : null;
  }

  /**
   * For each episode, in order: null when it committed no send, otherwise the event ids its replies covered
   * ('all' for a marker that does not list them).
   */
  async answered(groupId: string | null, episodeIds: readonly string[]): Promise<(Set<string> | 'all' | null)[]> {
    if (episodeIds.length === 0) return [];
    const partition = this.keys.partitionOf(groupId);
    const marks = await this.redis.mget(...episodeIds.map((id) => this.keys.episodeActed(partition, id)));
    return marks.map((mark) => {
      if (mark === null) return null;
      try {
        const ids: unknown = JSON.parse(mark);
        return Array.isArray(ids) ? new Set(ids.filter((id): id is string => typeof id === 'string')) : 'all';
      } catch {
        return 'all';
      }
    });
  }

  async commit(
    state: EpisodeState,
    expectedRev: number,
    events: EventEnvelope[],
    options: { acts: boolean; final: boolean; yieldAfterSeq?: number },
  ): Promise<CommitResult> {
    // Validated once, here, against the contracts; then serialised once and sealed like every bus writer's entries.
    const sealed = events.map((event) => this.eventLog.sealed(event));
    const p = this.keys.partitionOf(state.groupId);
    const args: (string | number | Buffer)[] = [
      expectedRev,
      wireArg(JSON.stringify(state)),
      EPISODE_STATE_TTL_SECONDS,
      options.acts ? '1' : '0',
      options.final ? '1' : '0',
      events.some((e) => e.kind === EventKind.ActionSend) ? JSON.stringify(state.answered ?? []) : '',
      options.yieldAfterSeq !== undefined ? options.yieldAfterSeq : '',
      // Outbound rests between reads while the log holds nothing for it: the commit that appends a send wakes it.
      ...scriptWakes(this.keys, p, events),
      passOverArgument(events.map((event) => event.kind)),
    ];
    for (const entry of sealed) args.push(entry.kind, entry.bytes, entry.seal);
    const [status, rev, control] = await (
      this.redis as unknown as {
        qunliEpisodeCommit(...a: (string | number | Buffer)[]): Promise<[number, number, string | null | undefined]>;
      }
    ).qunliEpisodeCommit(
      this.keys.episodeState(p, state.episodeId),
      this.keys.stream(p),
      this.keys.episodeControl(p, state.episodeId),
      this.keys.episodeDone(p, state.episodeId),
      this.keys.episodeActed(p, state.episodeId),
      ...args,
    );
    if (status === 1) {
      return { kind: 'committed', rev, control: control ?? null };
    }
    if (status === -1) return { kind: 'stopped' };
    if (status === -2) return { kind: 'yielded', control: control ?? '' };
    return { kind: 'conflict', rev };
  }
}

function loaded(
  rev: string | null | undefined,
  json: string | null | undefined,
): { state: EpisodeState; rev: number } | null {
  if (rev === null || rev === undefined || json === null || json === undefined) return null;
  return { state: JSON.parse(json) as EpisodeState, rev: Number(rev) };
}
