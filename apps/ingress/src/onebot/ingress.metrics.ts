import { Injectable } from '@nestjs/common';
import { Metrics } from '@app/platform';
import type { EventKind } from '@app/contracts';
import type { IgnoreReason, PostType, RejectReason } from './onebot-event.normaliser.js';

export type Transport = 'http' | 'ws_reverse' | 'ws_forward';

/** Label values come from the wire; keep them short and plain so a hostile sender cannot blow up cardinality. */
function segmentLabel(type: string): string {
  return /^[a-z0-9_]{1,24}$/i.test(type) ? type : 'other';
}

/** Every ingress metric, in one place so the names match the dashboards. */
@Injectable()
export class IngressMetrics {
  private readonly received;
  private readonly accepted;
  private readonly ignored;
  private readonly rejected;
  private readonly duplicates;
  private readonly unknownSegments;
  private readonly unavailable;
  private readonly deadLettered;
  private readonly repaired;

  constructor(metrics: Metrics) {
    this.received = metrics.counter({
      name: 'qunli_ingress_received_total',
      help: 'OneBot inputs received (authenticated and parsed), by transport and post_type',
      labelNames: ['transport', 'post_type'],
    });
    this.accepted = metrics.counter({
      name: 'qunli_ingress_accepted_total',
      help: 'OneBot inputs appended to the event log, by event kind',
      labelNames: ['kind'],
    });
    this.ignored = metrics.counter({
      name: 'qunli_ingress_ignored_total',
      help: 'Valid OneBot inputs deliberately not appended, by reason (hard rules by their name)',
      labelNames: ['reason'],
    });
    this.rejected = metrics.counter({
      name: 'qunli_ingress_rejected_total',
      help: 'OneBot inputs refused, by reason',
      labelNames: ['reason'],
    });
    this.duplicates = metrics.counter({
      name: 'qunli_ingress_duplicates_total',
      help: 'OneBot inputs already appended (upstream retries, the same event over several transports)',
    });
    this.unknownSegments = metrics.counter({
      name: 'qunli_ingress_unknown_segments_total',
      help: 'Message segments of a type ingress has no rendering for (kept as-is), by type',
      labelNames: ['type'],
    });
    this.unavailable = metrics.counter({
      name: 'qunli_ingress_unavailable_total',
      help: 'OneBot inputs not taken because the event log (Redis) did not acknowledge them, by transport',
      labelNames: ['transport'],
    });
    this.deadLettered = metrics.counter({
      name: 'qunli_ingress_dead_letters_total',
      help: 'Refused OneBot inputs written to the ingress dead-letter stream, by reason',
      labelNames: ['reason'],
    });
    this.repaired = metrics.counter({
      name: 'qunli_ingress_repaired_strings_total',
      help: 'Strings of accepted inputs whose lone UTF-16 surrogates were replaced with U+FFFD',
    });
  }

  countRepaired(strings: number): void {
    this.repaired.inc(strings);
  }

  countReceived(transport: Transport, postType: PostType | 'other'): void {
    this.received.inc({ transport, post_type: postType });
  }

  countAccepted(kind: EventKind): void {
    this.accepted.inc({ kind });
  }

  countIgnored(reason: IgnoreReason): void {
    this.ignored.inc({ reason });
  }

  countRejected(reason: RejectReason): void {
    this.rejected.inc({ reason });
  }

  countDuplicate(): void {
    this.duplicates.inc();
  }

  countUnknownSegments(types: readonly string[]): void {
    for (const type of types) this.unknownSegments.inc({ type: segmentLabel(type) });
  }

  countUnavailable(transport: Transport): void {
    this.unavailable.inc({ transport });
  }

  countDeadLettered(reason: RejectReason): void {
    this.deadLettered.inc({ reason });
  }
}
