/** Totals of ingress's outcome counters, read from its `/metrics` (Prometheus text). */
export interface IngressOutcomes {
  received: number;
  accepted: number;
  ignored: number;
  duplicates: number;
  rejected: number;
  unavailable: number;
}

const NAMES: Record<string, keyof IngressOutcomes> = {
  qunli_ingress_received_total: 'received',
  qunli_ingress_accepted_total: 'accepted',
  qunli_ingress_ignored_total: 'ignored',
  qunli_ingress_duplicates_total: 'duplicates',
  qunli_ingress_rejected_total: 'rejected',
  qunli_ingress_unavailable_total: 'unavailable',
};

/** Sum every series of the named counters (labels ignored). */
export function parseIngressOutcomes(text: string): IngressOutcomes {
  const totals: IngressOutcomes = { received: 0, accepted: 0, ignored: 0, duplicates: 0, rejected: 0, unavailable: 0 };
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-z_]+)(?:\{[^}]*\})?\s+([0-9.eE+-]+)$/.exec(line.trim());
    const key = match ? NAMES[match[1]!] : undefined;
    if (key) totals[key] += Number(match![2]);
  }
  return totals;
}

export async function readIngressOutcomes(ingressUrl: string): Promise<IngressOutcomes> {
  const response = await fetch(`${ingressUrl}/metrics`);
  return parseIngressOutcomes(await response.text());
}

/** Inputs ingress finished with, whatever the outcome: each one is exactly one of these. */
export function settled(o: IngressOutcomes): number {
  return o.accepted + o.ignored + o.duplicates + o.rejected + o.unavailable;
}
