import { Injectable } from '@nestjs/common';
import { HealthDetails, Metrics } from '@app/platform';
import type { Transport } from './ingress.metrics.js';
import type { ConnectionSignal } from './onebot-event.normaliser.js';

/** Distinct bot accounts tracked in labels; beyond it they share `other` (a hostile X-Self-ID cannot explode labels). */
const MAX_ACCOUNTS = 32;

export interface AccountHealth {
  selfId: string;
  /** Open WebSocket connections by transport. */
  connections: Partial<Record<Transport, number>>;
  /** Epoch seconds of the last heartbeat, as the implementation reported it. */
  lastHeartbeat?: number;
  online?: boolean;
  good?: boolean;
}

/**
 * The OneBot connections of this ingress, keyed by bot account (`self_id`): open WebSockets per transport, and
 * what lifecycle and heartbeat events said. Feeds the connection-health metrics and `/health`.
 */
@Injectable()
export class OneBotConnections {
  private readonly accounts = new Map<string, AccountHealth>();
  private readonly connectionsGauge;
  private readonly lastHeartbeat;
  private readonly online;

  constructor(metrics: Metrics, health: HealthDetails) {
    health.add('onebot', () => ({ accounts: this.snapshot() }));
    this.connectionsGauge = metrics.gauge({
      name: 'qunli_onebot_connections',
      help: 'Open OneBot WebSocket connections, by transport and bot account',
      labelNames: ['transport', 'self_id'],
    });
    this.lastHeartbeat = metrics.gauge({
      name: 'qunli_onebot_last_heartbeat_seconds',
      help: 'Epoch seconds of the last OneBot heartbeat, by bot account',
      labelNames: ['self_id'],
    });
    this.online = metrics.gauge({
      name: 'qunli_onebot_online',
      help: '1 when the implementation last reported the bot account online (heartbeat status, lifecycle)',
      labelNames: ['self_id'],
    });
  }

  private account(selfId: string): AccountHealth {
    const key = this.accounts.has(selfId) || this.accounts.size < MAX_ACCOUNTS ? selfId : 'other';
    let account = this.accounts.get(key);
    if (!account) {
      account = { selfId: key, connections: {} };
      this.accounts.set(key, account);
    }
    return account;
  }

  opened(transport: Transport, selfId: string): void {
    const account = this.account(selfId);
    account.connections[transport] = (account.connections[transport] ?? 0) + 1;
    this.connectionsGauge.inc({ transport, self_id: account.selfId });
  }

  closed(transport: Transport, selfId: string): void {
    const account = this.account(selfId);
    account.connections[transport] = Math.max(0, (account.connections[transport] ?? 0) - 1);
    this.connectionsGauge.dec({ transport, self_id: account.selfId });
  }

  signal(signal: ConnectionSignal): void {
    const account = this.account(signal.selfId);
    if (signal.type === 'heartbeat') {
      account.lastHeartbeat = signal.time;
      this.lastHeartbeat.set({ self_id: account.selfId }, signal.time);
    }
    if (signal.online !== undefined) {
      account.online = signal.online;
      this.online.set({ self_id: account.selfId }, signal.online ? 1 : 0);
    }
    if (signal.good !== undefined) account.good = signal.good;
  }

  /** For `/health`: every account seen, with its connections and last heartbeat. */
  snapshot(): AccountHealth[] {
    return [...this.accounts.values()].map((a) => ({ ...a, connections: { ...a.connections } }));
  }
}
