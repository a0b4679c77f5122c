import type { Counter, Histogram } from 'prom-client';
import type { EventEnvelope } from '@app/contracts';
import { Metrics, SHORT_SECONDS_BUCKETS } from '@app/platform';

/** The event bus's own counters, shared by every reader of one app. */
export class BusMetrics {
  readonly entries: Counter<'group' | 'kind' | 'outcome'>;
  readonly deadLetters: Counter<'group' | 'reason'>;
  readonly handlerSeconds: Histogram<'group'>;
  readonly urgentWaitSeconds: Histogram<'group'>;
  readonly urgentAhead: Histogram<'group'>;
  private readonly events: Counter<'kind' | 'decision'>;

  constructor(metrics: Metrics) {
    this.entries = metrics.counter({
      name: 'qunli_stream_entries_total',
      help: 'Stream entries read by a consumer group, by outcome (handled, skipped, duplicate, failed, unavailable)',
      labelNames: ['group', 'kind', 'outcome'],
    });
    this.deadLetters = metrics.counter({
      name: 'qunli_dead_letters_total',
      help: 'Entries moved to the dead-letter stream',
      labelNames: ['group', 'reason'],
    });
    this.handlerSeconds = metrics.histogram({
      name: 'qunli_stream_handler_seconds',
      help: 'Time from handler start to committed acknowledgement',
      labelNames: ['group'],
      buckets: SHORT_SECONDS_BUCKETS,
    });
    // Where an urgent entry (an @, or an event of its episode, which carries its priority) waits inside a consumer:
    // behind the earlier entries of its own group (they run first, in order, at its priority), from being read to
    // its own turn. A growing `ahead` means the consumer group is behind its groups' traffic.
    this.urgentWaitSeconds = metrics.histogram({
      name: 'qunli_stream_urgent_wait_seconds',
      help: 'Time from reading an urgent entry (an @ or its episode’s events) to its handler starting; its group’s earlier entries run first',
      labelNames: ['group'],
      buckets: SHORT_SECONDS_BUCKETS,
    });
    this.urgentAhead = metrics.histogram({
      name: 'qunli_stream_urgent_ahead',
      help: 'Entries of its own chat group held before an urgent entry (an @ or its episode’s events) when it was read, the running one included',
      labelNames: ['group'],
      buckets: [0, 1, 2, 4, 8, 16, 32, 64, 128],
    });
    this.events = metrics.counter({
      name: 'qunli_events_total',
      help: 'Events appended to the log, by kind and (for decisions) outcome',
      labelNames: ['kind', 'decision'],
    });
  }

  published(event: EventEnvelope): void {
    const outcome = (event.payload as { outcome?: unknown }).outcome;
    this.events.inc({ kind: event.kind, decision: event.kind === 'decision.made' ? String(outcome) : '' });
  }
}
