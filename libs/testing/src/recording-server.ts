import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '@app/onebot';

export interface RecordedPost {
  headers: IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown>;
}

export interface RecordingServer {
  /** The URL to post to (`…/onebot/v11/http`, standing in for ingress). */
  url: string;
  received: RecordedPost[];
  close(): Promise<void>;
}

/** A stand-in for ingress: records every POST body and answers 204. */
export async function startRecordingServer(): Promise<RecordingServer> {
  const received: RecordedPost[] = [];
  const server: Server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      received.push({ headers: req.headers, raw, body: JSON.parse(raw) as Record<string, unknown> });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/onebot/v11/http`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
