import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace, parseEnvelope, type EventEnvelope } from '@app/contracts';
import { Metrics, REDIS } from '@app/platform';
import type { Counter } from 'prom-client';

/**
 * How far before an event's own time its stream entry may sit: the producer mints the id, then appends, so the
 * entry is later unless the producer's clock runs ahead of Redis's.
 */
const SLACK_MS = 30_000;
const BATCH = 500;
/** Entries one lookup reads at most, so a lookup for an id that is not there stays bounded. */
const MAX_SCANNED = 50_000;

/** The epoch ms a UUIDv7 was minted at, or undefined for other ids. */
export function uuidV7Ms(id: string): number | undefined {
  const hex = id.replace(/-/g, '');
  if (!/^[0-9a-f]{32}$/i.test(hex) || hex[12] !== '7') return undefined;
  return parseInt(hex.slice(0, 12), 16);
}

/**
 * Finds events by id: the messages an `interrupt` names, the `tool.result` that resumes an episode, control
 * commands a worker missed on pub/sub. Messages an episode takes in are still held by the scheduler
 * (`Keyspace.heldMessages`, written in its commit before the command that names them), so they are read by id;
 * anything else comes from the partition's hot log. Event ids are UUIDv7, so a scan starts near the event's own
 * time, and only entries whose raw JSON names what is looked for are parsed.
 */
@Injectable()
export class EventLookupStore {
  private readonly scanned: Counter;
  private readonly parsed: Counter;
  private readonly found: Counter<'where'>;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
    metrics: Metrics,
  ) {
    this.scanned = metrics.counter({
      name: 'qunli_event_lookup_scanned_total',
      help: 'Stream entries read by event lookups (interrupts, tool results, missed control commands)',
    });
    this.parsed = metrics.counter({
      name: 'qunli_event_lookup_parsed_total',
      help: 'Stream entries event lookups parsed: the ones whose raw JSON contained what was looked for',
    });
    this.found = metrics.counter({
      name: 'qunli_event_lookup_found_total',
      help: "Events found by id, by where: held (the scheduler's held messages) or log (a scan of the hot log)",
      labelNames: ['where'],
    });
  }

  async find(groupId: string | null, ids: readonly string[]): Promise<Map<string, EventEnvelope>> {
    const found = new Map<string, EventEnvelope>();
    if (ids.length === 0) return found;
    const held = await this.redis.hmget(this.keys.heldMessages(this.keys.partitionOf(groupId)), ...ids);
    held.forEach((json, i) => {
      if (json === null) return;
      try {
        const event = parseEnvelope(JSON.parse(json));
        if (event.id === ids[i]) found.set(event.id, event);
      } catch {
        // Not a usable envelope: the log has the original.
      }
    });
    this.found.inc({ where: 'held' }, found.size);
    const rest = ids.filter((id) => !found.has(id));
    if (rest.length === 0) return found;
    const scanned = await this.scan(groupId, (e) => rest.includes(e.id), rest.length, rest, rest);
    this.found.inc({ where: 'log' }, scanned.size);
    for (const [id, event] of scanned) found.set(id, event);
    return found;
  }

  /**
   * Events matching `accept` from `sinceMs` (epoch ms) on, at most `limit`. With `needle`, only entries whose raw
   * JSON contains it are parsed (e.g. the episode id the wanted events name).
   */
  async since(
    groupId: string | null,
    sinceMs: number,
    accept: (event: EventEnvelope) => boolean,
    limit = 1000,
    needle?: string,
  ): Promise<EventEnvelope[]> {
    const found = await this.scan(groupId, accept, limit, [], needle === undefined ? [] : [needle], sinceMs);
    return [...found.values()];
  }

  private async scan(
    groupId: string | null,
    accept: (event: EventEnvelope) => boolean,
    limit: number,
    ids: readonly string[],
    needles: readonly string[],
    sinceMs?: number,
  ): Promise<Map<string, EventEnvelope>> {
    const found = new Map<string, EventEnvelope>();
    if (limit === 0) return found;
    const stream = this.keys.stream(this.keys.partitionOf(groupId));
    const times = ids.map(uuidV7Ms).filter((t): t is number => t !== undefined);
    const from = sinceMs ?? (times.length === ids.length && times.length > 0 ? Math.min(...times) - SLACK_MS : 0);
    let start = from > 0 ? `${Math.floor(from)}-0` : '-';
    let scanned = 0;
    while (found.size < limit && scanned < MAX_SCANNED) {
      const entries = await this.redis.xrange(stream, start, '+', 'COUNT', BATCH);
      for (const [, fields] of entries) {
        const json = fields[fields.indexOf('e') + 1];
        if (json === undefined) continue;
        // A partition's log holds every group's traffic: parsing (and validating) each entry made one lookup cost
        // milliseconds per thousand entries, and an episode started late did several. An entry that does not
        // even contain what is looked for is not parsed.
        if (needles.length > 0 && !needles.some((needle) => json.includes(needle))) continue;
        this.parsed.inc();
        try {
          const event = parseEnvelope(JSON.parse(json));
          if (accept(event)) found.set(event.id, event);
        } catch {
          // An entry that does not parse is the bus's problem (dead-lettered there); it is not what we look for.
          continue;
        }
      }
      scanned += entries.length;
      this.scanned.inc(entries.length);
      if (entries.length < BATCH) break;
      start = `(${entries[entries.length - 1]![0]}`;
    }
    return found;
  }
}
