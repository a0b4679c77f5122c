import { Injectable, Logger } from '@nestjs/common';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gunzip, inflate } from 'node:zlib';
import { QunliError } from '@app/contracts';
import { QunliConfig } from '@app/platform';
import { checkSignature } from './onebot-auth.rules.js';
import { OneBotErrorCode, problemError, sendError } from './onebot-http.errors.js';
import { OneBotIntake } from './onebot-intake.service.js';
import { tokenProblem } from './onebot-http.middleware.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './onebot-json.rules.js';
import type { PayloadProblem } from './onebot-fields.rules.js';

export const ONEBOT_HTTP_PATH = '/onebot/v11/http';

/** How much of a refused oversized body ingress reads and drops before its 413, as a multiple of the limit. */
const OVERSIZE_DROP_FACTOR = 16;
/** How long ingress waits for the rest of a refused oversized body before its 413. */
const OVERSIZE_DROP_MS = 10_000;

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

function selfIdOf(body: unknown): string | undefined {
  const value = typeof body === 'object' && body !== null ? (body as { self_id?: unknown }).self_id : undefined;
  return typeof value === 'number' || typeof value === 'string' ? String(value) : undefined;
}

function pathOf(url: string | undefined): string {
  const path = (url ?? '/').split('?', 1)[0]!;
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

/** A refusal: the status, the error body, and the problem counted and dead-lettered (none for a 503). */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly error: QunliError,
    readonly problem?: PayloadProblem,
    readonly raw?: Buffer,
    readonly headers: Record<string, string> = {},
  ) {
    super(error.message);
  }
}

const tooLarge = (limit: number): Refusal => {
  const message = `body exceeds ${limit} bytes`;
  return new Refusal(413, new QunliError(OneBotErrorCode.TooLarge, message), {
    field: '$',
    message,
    reason: 'too_large',
  });
};

const refusal = (problem: PayloadProblem, raw?: Buffer): Refusal =>
  new Refusal(400, problemError(problem), problem, raw);

/**
 * OneBot v11 HTTP POST, handled on the bare Node server before Express and Nest see the request: this one route
 * carries every event an HTTP implementation sends, and Express's and Nest's per-request pipeline was about half
 * of ingress's CPU (docs/adr/0021). Every other route (`/health`, `/metrics`) goes on to Nest unchanged.
 *
 * In this order: the access token (before a byte of the body is read), the body within `QUNLI_INGRESS_MAX_BYTES`
 * (413), `Content-Type: application/json`, the HMAC signature over the raw bytes received, the nesting depth, the
 * JSON, `X-Self-ID` against the body, then the intake. 204 means taken (or deliberately ignored) and durable; 4xx
 * names the problem as `{"error": {code, message, …}}`; 503 asks the implementation to retry. Nothing a body holds
 * makes it a plain 500.
 */
@Injectable()
export class OneBotHttpEndpoint {
  private readonly logger = new Logger('OneBotHttpEndpoint');
  private readonly secret: string | undefined;
  private readonly accessToken: string | undefined;
  private readonly limit: number;

  constructor(
    private readonly intake: OneBotIntake,
    config: QunliConfig,
  ) {
    this.secret = config.ONEBOT_SECRET;
    this.accessToken = config.ONEBOT_ACCESS_TOKEN;
    this.limit = config.QUNLI_INGRESS_MAX_BYTES;
  }

  /** Take `ONEBOT_HTTP_PATH` on `server`; every other request goes to the listeners it had (Express). */
  attach(server: Server): void {
    const others = server.listeners('request') as RequestListener[];
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (pathOf(req.url) === ONEBOT_HTTP_PATH) void this.receive(req, res);
      else for (const listener of others) listener.call(server, req, res);
    });
  }

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const peer = req.socket.remoteAddress ?? 'http';
    try {
      const status = await this.handle(req, peer);
      res.statusCode = status;
      res.end();
    } catch (error) {
      if (error instanceof Refusal) {
        if (error.problem) this.intake.refuse(error.problem, 'http', { peer, ...(error.raw && { raw: error.raw }) });
        if (error.status === 413) {
          res.setHeader('Connection', 'close');
          await this.dropRest(req);
        }
        sendError(res, error.status, error.error, error.headers);
        return;
      }
      this.logger.error(`POST ${ONEBOT_HTTP_PATH} from ${peer} failed: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent)
        sendError(res, 500, new QunliError(OneBotErrorCode.Internal, 'internal error; retry later'));
      else res.destroy();
    }
  }

  /** The status of a taken request; a refusal is thrown. */
  private async handle(req: IncomingMessage, peer: string): Promise<number> {
    const token = tokenProblem(this.accessToken, req);
    if (token) {
      throw new Refusal(
        401,
        token,
        { field: 'Authorization', message: token.message, reason: 'unauthorized' },
        undefined,
        { 'WWW-Authenticate': 'Bearer' },
      );
    }
    if (req.method !== 'POST') {
      throw new Refusal(
        405,
        new QunliError(OneBotErrorCode.MethodNotAllowed, 'only POST is accepted here'),
        undefined,
        undefined,
        {
          Allow: 'POST',
        },
      );
    }
    const raw = await this.body(req);
    if (!isJson(req.headers['content-type']) || raw.length === 0) {
      throw refusal({
        field: '$',
        message: 'expected a JSON body sent with Content-Type: application/json',
        reason: 'bad_json',
      });
    }
    const signature = req.headers['x-signature'];
    switch (checkSignature(this.secret, raw, Array.isArray(signature) ? signature[0] : signature)) {
      case 'ok':
        break;
      case 'missing':
        throw new Refusal(401, new QunliError(OneBotErrorCode.Unauthorized, 'X-Signature header required'), {
          field: 'X-Signature',
          message: 'header required',
          reason: 'unauthorized',
        });
      case 'invalid':
        throw new Refusal(
          403,
          new QunliError(OneBotErrorCode.BadSignature, 'X-Signature does not match sha1=HMAC-SHA1(secret, raw body)'),
          { field: 'X-Signature', message: 'does not match the body', reason: 'bad_signature' },
          raw,
        );
    }
    if (nestsDeeperThan(raw, MAX_JSON_DEPTH)) {
      throw refusal(
        {
          field: '$',
          message: `nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`,
          reason: 'invalid_payload',
        },
        raw,
      );
    }
    // As Express's JSON parser did: a UTF-8 byte-order mark is skipped, and only an object or array is JSON here.
    const text = raw.toString('utf8').replace(/^\ufeff/, '');
    if (!/^\s*[{[]/.test(text)) {
      throw refusal(
        { field: '$', message: 'body is not valid JSON: expected an object or an array', reason: 'bad_json' },
        raw,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw refusal(
        { field: '$', message: `body is not valid JSON: ${(error as Error).message}`, reason: 'bad_json' },
        raw,
      );
    }
    const header = req.headers['x-self-id'];
    const selfHeader = (Array.isArray(header) ? header[0] : header)?.trim();
    const bodySelf = selfIdOf(body);
    if (selfHeader !== undefined && selfHeader !== '' && bodySelf !== undefined && selfHeader !== bodySelf) {
      throw refusal(
        {
          field: 'self_id',
          message: `is ${bodySelf} but X-Self-ID says ${selfHeader.slice(0, 20)}`,
          reason: 'self_id_mismatch',
        },
        raw,
      );
    }
    const outcome = await this.intake.ingest(body, 'http', { failFast: true, raw, peer });
    switch (outcome.status) {
      case 'accepted':
      case 'duplicate':
      case 'ignored':
        return 204;
      case 'rejected':
        // The intake already counted and dead-lettered it.
        throw new Refusal(400, problemError(outcome.problem));
      case 'unavailable':
        throw new Refusal(
          503,
          new QunliError(OneBotErrorCode.Unavailable, 'the event log is unavailable; retry later'),
        );
    }
  }

  /**
   * Reads the rest of a refused body and drops it, before the 413 goes out and the connection closes: a sender still
   * writing would otherwise meet a reset connection instead of the answer (many HTTP clients read the response only
   * once the body is sent). Bounded: past `OVERSIZE_DROP_FACTOR` times the limit, or `OVERSIZE_DROP_MS`, the answer
   * goes out anyway.
   */
  private dropRest(req: IncomingMessage): Promise<void> {
    if (req.complete || req.destroyed) return Promise.resolve();
    const most = this.limit * OVERSIZE_DROP_FACTOR;
    return new Promise<void>((resolve) => {
      let dropped = 0;
      const done = (): void => {
        clearTimeout(timer);
        req.off('data', onData).off('end', done).off('close', done).off('error', done);
        resolve();
      };
      const onData = (chunk: Buffer): void => {
        dropped += chunk.length;
        if (dropped > most) done();
      };
      const timer = setTimeout(done, OVERSIZE_DROP_MS).unref();
      req.on('data', onData).once('end', done).once('close', done).once('error', done);
      req.resume();
    });
  }

  /** The raw body, inflated if it came compressed, refused past the limit without reading the rest. */
  private async body(req: IncomingMessage): Promise<Buffer> {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.limit) throw tooLarge(this.limit);
    const chunks: Buffer[] = [];
    let size = 0;
    // Not `for await`: leaving it early destroys the socket, and the caller would never see its 413.
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        size += chunk.length;
        if (size <= this.limit) {
          chunks.push(chunk);
          return;
        }
        req.off('data', onData);
        req.resume();
        reject(tooLarge(this.limit));
      };
      req.on('data', onData);
      req.once('end', resolve);
      req.once('error', reject);
    });
    const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
    const encoding = req.headers['content-encoding']?.trim().toLowerCase() ?? 'identity';
    if (encoding === 'identity') return raw;
    if (encoding !== 'gzip' && encoding !== 'deflate') {
      throw new Refusal(
        415,
        new QunliError(OneBotErrorCode.BadJson, `unsupported Content-Encoding ${encoding.slice(0, 20)}`),
        {
          field: 'Content-Encoding',
          message: `unsupported: ${encoding.slice(0, 20)}`,
          reason: 'bad_json',
        },
      );
    }
    try {
      return await (encoding === 'gzip' ? gunzipAsync : inflateAsync)(raw, { maxOutputLength: this.limit });
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(this.limit);
      throw refusal({ field: '$', message: `body does not inflate: ${(error as Error).message}`, reason: 'bad_json' });
    }
  }
}
