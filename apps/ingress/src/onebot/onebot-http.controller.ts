import { Controller, Headers, HttpCode, Post, Req } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { QunliError } from '@app/contracts';
import { QunliConfig } from '@app/platform';
import { checkSignature } from './onebot-auth.rules.js';
import { OneBotErrorCode, oneBotHttpError, problemError } from './onebot-http.errors.js';
import { OneBotIntake } from './onebot-intake.service.js';

/** The request after the JSON body parser ran (`rawBody` because the app is created with `rawBody: true`). */
interface ParsedRequest extends IncomingMessage {
  body?: unknown;
  rawBody?: Buffer;
}

export const ONEBOT_HTTP_PATH = '/onebot/v11/http';

function selfIdOf(body: unknown): string | undefined {
  const value = typeof body === 'object' && body !== null ? (body as { self_id?: unknown }).self_id : undefined;
  return typeof value === 'number' || typeof value === 'string' ? String(value) : undefined;
}

/**
 * OneBot v11 HTTP POST: the implementation posts each event here. The access token was checked before the body
 * was read (`accessTokenGate`); this checks the HMAC signature over the raw bytes received (never re-serialised
 * JSON), that `X-Self-ID` names the same account as the body, and hands the event to the intake. 204 means taken
 * (or deliberately ignored) and durable; 400 names the bad field; 503 asks the implementation to retry.
 */
@Controller()
export class OneBotHttpController {
  private readonly secret: string | undefined;

  constructor(
    private readonly intake: OneBotIntake,
    config: QunliConfig,
  ) {
    this.secret = config.ONEBOT_SECRET;
  }

  @Post(ONEBOT_HTTP_PATH)
  @HttpCode(204)
  async receive(
    @Req() req: ParsedRequest,
    @Headers('x-signature') signature: string | undefined,
    @Headers('x-self-id') selfHeader: string | undefined,
  ): Promise<void> {
    const peer = req.socket.remoteAddress ?? 'http';
    if (req.rawBody === undefined || req.rawBody.length === 0 || req.body === undefined) {
      const problem = {
        field: '$',
        message: 'expected a JSON body sent with Content-Type: application/json',
        reason: 'bad_json',
      } as const;
      this.intake.refuse(problem, 'http', { peer });
      throw oneBotHttpError(400, problemError(problem));
    }
    switch (checkSignature(this.secret, req.rawBody, signature)) {
      case 'ok':
        break;
      case 'missing':
        this.intake.refuse({ field: 'X-Signature', message: 'header required', reason: 'unauthorized' }, 'http', {
          peer,
        });
        throw oneBotHttpError(401, new QunliError(OneBotErrorCode.Unauthorized, 'X-Signature header required'));
      case 'invalid':
        this.intake.refuse(
          { field: 'X-Signature', message: 'does not match the body', reason: 'bad_signature' },
          'http',
          { raw: req.rawBody, peer },
        );
        throw oneBotHttpError(
          403,
          new QunliError(OneBotErrorCode.BadSignature, 'X-Signature does not match sha1=HMAC-SHA1(secret, raw body)'),
        );
    }
    const bodySelf = selfIdOf(req.body);
    if (
      selfHeader !== undefined &&
      selfHeader.trim() !== '' &&
      bodySelf !== undefined &&
      selfHeader.trim() !== bodySelf
    ) {
      const problem = {
        field: 'self_id',
        message: `is ${bodySelf} but X-Self-ID says ${selfHeader.trim().slice(0, 20)}`,
        reason: 'self_id_mismatch',
      } as const;
      this.intake.refuse(problem, 'http', { raw: req.rawBody, peer });
      throw oneBotHttpError(400, problemError(problem));
    }
    const outcome = await this.intake.ingest(req.body, 'http', { failFast: true, raw: req.rawBody, peer });
    switch (outcome.status) {
      case 'accepted':
      case 'duplicate':
      case 'ignored':
        return;
      case 'rejected':
        throw oneBotHttpError(400, problemError(outcome.problem));
      case 'unavailable':
        throw oneBotHttpError(
          503,
          new QunliError(OneBotErrorCode.Unavailable, 'the event log is unavailable; retry later'),
        );
    }
  }
}
