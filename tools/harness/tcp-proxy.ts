import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { freePort } from '@app/testing';

/**
 * A TCP proxy between the apps and a server they depend on (Postgres). `cut()` resets every open connection and
 * refuses new ones until `restore()`: to the apps it is the database going away, while the real server — shared
 * with other people's tests — keeps running untouched.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private cutting = false;
  port = 0;
  cuts = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.port = await freePort();
    const server = createServer((client) => this.pipe(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  /** Drop every connection and refuse new ones. */
  cut(): void {
    this.cutting = true;
    this.cuts += 1;
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
  }

  restore(): void {
    this.cutting = false;
  }

  async stop(): Promise<void> {
    this.cut();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private pipe(client: Socket): void {
    if (this.cutting) {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => this.sockets.delete(socket));
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }
}
