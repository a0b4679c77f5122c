import { SHORT_SECONDS_BUCKETS, type Metrics } from '@app/platform';
import type { ApiOutcomeKind } from './api-outcome.rules.js';
import type { ApiTransport } from './onebot-api.js';

/** Calls and their durations for every OneBot API transport, under the same two metric names. */
export class ApiCallMetrics {
  private readonly calls;
  private readonly duration;

  constructor(metrics: Metrics) {
    this.calls = metrics.counter({
      name: 'qunli_onebot_api_calls_total',
      help: 'OneBot API calls by action, transport and classified outcome (ok, failed, unknown, unreachable)',
      labelNames: ['action', 'transport', 'outcome'],
    });
    this.duration = metrics.histogram({
      name: 'qunli_onebot_api_call_duration_seconds',
      help: 'Time from sending a OneBot API request to its classified outcome',
      labelNames: ['action', 'transport', 'outcome'],
      buckets: SHORT_SECONDS_BUCKETS,
    });
  }

  record(action: string, transport: ApiTransport, outcome: ApiOutcomeKind, startedAt: number): void {
    // Action names come from our own code, never from the wire, so the label set stays bounded.
    this.calls.inc({ action, transport, outcome });
    this.duration.observe({ action, transport, outcome }, (performance.now() - startedAt) / 1000);
  }
}
