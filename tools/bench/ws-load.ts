import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { BENCH_SELF_ID, BENCH_TOKEN } from './stack.js';

/** Bytes queued on a socket before the sender waits: keeps the bench from buffering the whole run in memory. */
const HIGH_WATER_BYTES = 1 << 20;

/**
 * Sends OneBot events as a NapCat reverse WebSocket does: it connects to ingress's `/onebot/v11/ws` as an `Event`
 * client with the access token and `X-Self-ID`, and pushes each event as one text frame. OneBot v11 has no
 * per-event answer on a WebSocket, so acceptance is read from ingress's counters.
 */
export class ReverseWsLoad {
  private readonly sockets: WebSocket[] = [];

  constructor(
    private readonly ingressUrl: string,
    private readonly connections: number,
  ) {}

  async open(): Promise<void> {
    const url = `${this.ingressUrl.replace(/^http/, 'ws')}/onebot/v11/ws`;
    for (let i = 0; i < this.connections; i++) {
      const socket = new WebSocket(url, {
        headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'x-self-id': BENCH_SELF_ID, 'x-client-role': 'Event' },
        perMessageDeflate: false,
      });
      await once(socket, 'open');
      this.sockets.push(socket);
    }
  }

  /** Frame `i` goes on socket `i mod connections`; waits while a socket has more than 1 MiB unsent. */
  async send(i: number, event: Record<string, unknown>): Promise<void> {
    const socket = this.sockets[i % this.sockets.length]!;
    while (socket.bufferedAmount > HIGH_WATER_BYTES) await sleep(1);
    if (socket.readyState !== WebSocket.OPEN) throw new Error('ingress closed the reverse WebSocket');
    socket.send(JSON.stringify(event));
  }

  async close(): Promise<void> {
    await Promise.all(
      this.sockets.map(async (socket) => {
        if (socket.readyState === WebSocket.CLOSED) return;
        const closed = once(socket, 'close');
        socket.close(1000);
        await closed;
      }),
    );
  }
}
