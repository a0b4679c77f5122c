import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';

export interface PosterOptions {
  selfId: string;
  accessToken?: string;
  secret?: string;
  connections?: number;
}

export interface PostAnswer {
  status: number;
  body: string;
  /** Set when the request failed below HTTP (connection refused or reset: ingress is down). */
  error?: string;
}

/** How one message ended after the harness insisted on delivering it. */
export type Taken = { taken: true; attempts: number } | { taken: false; attempts: number; last: PostAnswer };

export function signature(secret: string, body: string): string {
  return `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;
}

/**
 * Posts OneBot events to ingress's HTTP POST endpoint the way an implementation's reporter does (Bearer token,
 * `X-Signature` HMAC over the exact body, `X-Self-ID`), over keep-alive connections.
 */
export class OneBotPoster {
  private readonly pool: Pool;

  constructor(
    ingressUrl: string,
    private readonly options: PosterOptions,
  ) {
    this.pool = new Pool(ingressUrl, { connections: options.connections ?? 16, pipelining: 1 });
  }

  /** POST a body as is (a string, possibly not JSON at all) with correct credentials unless `credentials` is false. */
  async postRaw(
    body: string,
    options: { credentials?: boolean; headers?: Record<string, string> } = {},
  ): Promise<PostAnswer> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-self-id': this.options.selfId,
      ...options.headers,
    };
    if (options.credentials !== false) {
      if (this.options.accessToken) headers.authorization = `Bearer ${this.options.accessToken}`;
      if (this.options.secret) headers['x-signature'] = signature(this.options.secret, body);
    }
    try {
      const response = await this.pool.request({
        path: '/onebot/v11/http',
        method: 'POST',
        headers,
        body,
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      return { status: response.statusCode, body: await response.body.text() };
    } catch (error) {
      return { status: 0, body: '', error: (error as Error).message };
    }
  }

  post(event: unknown): Promise<PostAnswer> {
    return this.postRaw(JSON.stringify(event));
  }

  /**
   * Deliver one event, retrying while ingress is down or answers 503 (an implementation with a retrying
   * reporter); a 2xx is taken, any other 4xx is a refusal and not retried.
   */
  async postUntilTaken(event: unknown, giveUpAfterMs = 120_000): Promise<Taken> {
    const body = JSON.stringify(event);
    const deadline = Date.now() + giveUpAfterMs;
    for (let attempts = 1; ; attempts++) {
      const answer = await this.postRaw(body);
      if (answer.status >= 200 && answer.status < 300) return { taken: true, attempts };
      const retry = answer.status === 0 || answer.status === 503 || answer.status === 502;
      if (!retry || Date.now() > deadline) return { taken: false, attempts, last: answer };
      await sleep(Math.min(2000, 100 * 2 ** Math.min(attempts, 5)));
    }
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}
