import { chooseTransport } from './transport.rules.js';

describe('choosing the send transport', () => {
  it('prefers the HTTP API, then a forward WebSocket, else the reverse WebSocket held by ingress', () => {
    expect(
      chooseTransport({ QUNLI_SEND_TRANSPORT: 'auto', ONEBOT_HTTP_API_URL: 'http://x', ONEBOT_WS_URL: 'ws://y' }),
    ).toBe('http');
    expect(chooseTransport({ QUNLI_SEND_TRANSPORT: 'auto', ONEBOT_WS_URL: 'ws://y' })).toBe('ws_forward');
    expect(chooseTransport({ QUNLI_SEND_TRANSPORT: 'auto' })).toBe('ws_reverse');
    expect(chooseTransport({ QUNLI_SEND_TRANSPORT: 'ws_reverse', ONEBOT_HTTP_API_URL: 'http://x' })).toBe('ws_reverse');
  });
});
