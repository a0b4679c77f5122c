import type { ApiTransport } from '@app/onebot';

export interface TransportSettings {
  QUNLI_SEND_TRANSPORT: 'auto' | ApiTransport;
  ONEBOT_HTTP_API_URL?: string | undefined;
  ONEBOT_WS_URL?: string | undefined;
}

/**
 * Which API transport outbound uses: the configured one, or by default the HTTP API when its URL is set, else a
 * forward WebSocket of our own when `ONEBOT_WS_URL` is set, else the reverse WebSocket the implementation holds
 * to ingress (relayed through Redis, docs/adr/0010) — so a setup with only a reverse WebSocket sends too.
 */
export function chooseTransport(settings: TransportSettings): ApiTransport {
  if (settings.QUNLI_SEND_TRANSPORT !== 'auto') return settings.QUNLI_SEND_TRANSPORT;
  if (settings.ONEBOT_HTTP_API_URL) return 'http';
  if (settings.ONEBOT_WS_URL) return 'ws_forward';
  return 'ws_reverse';
}
