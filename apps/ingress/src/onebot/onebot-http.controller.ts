import { Controller, Headers, HttpCode, Post, Req } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { QunliError } from '@app/contracts';
import { QunliConfig } from '@app/platform';
import { IngressMetrics } from './ingress.metrics.js';
import { checkSignature } from './onebot-auth.rules.js';
import { OneBotErrorCode, oneBotHttpError } from './onebot-http.errors.js';
import { OneBotIntake } from './onebot-intake.service.js';

/** The request after the JSON body parser ran (`rawBody` because the app is created with `rawBody: true`). */
interface ParsedRequest extends IncomingMessage {
  body?: unknown;
  rawBody?: Buffer;
}

export const ONEBOT_HTTP_PATH = '/onebot/v11/http';

/**
 * OneBot v11 HTTP POST: the implementation posts each event here. The access token was checked before the body
 * was read (`accessTokenGate`); this checks the HMAC signature over the raw body and hands the event to the
 * intake. 204 means taken (or deliberately ignored) and durable; 503 asks the implementation to retry.
 */
@Controller()
export class OneBotHttpController {
  private readonly secret: string | undefined;

  constructor(
    private readonly intake: OneBotIntake,
    private readonly metrics: IngressMetrics,
    config: QunliConfig,
  ) {
    this.secret = config.ONEBOT_SECRET;
  }

  @Post(ONEBOT_HTTP_PATH)
  @HttpCode(204)
  async receive(@Req() req: ParsedRequest, @Headers('x-signature') signature: string | undefined): Promise<void> {
    if (req.rawBody === undefined || req.body === undefined) {
      this.metrics.countRejected('bad_json');
      throw oneBotHttpError(
        400,
        new QunliError(OneBotErrorCode.BadJson, 'expected a JSON body sent with Content-Type: application/json'),
      );
    }
    switch (checkSignature(this.secret, req.rawBody, signature)) {
      case 'ok':
        break;
      case 'missing':
        this.metrics.countRejected('unauthorized');
        throw oneBotHttpError(401, new QunliError(OneBotErrorCode.Unauthorized, 'X-Signature header required'));
      case 'invalid':
        this.metrics.countRejected('bad_signature');
        throw oneBotHttpError(
          403,
          new QunliError(OneBotErrorCode.BadSignature, 'X-Signature does not match sha1=HMAC-SHA1(secret, body)'),
        );
    }
    const outcome = await this.intake.ingest(req.body, 'http', { failFast: true });
    switch (outcome.status) {
      case 'accepted':
      case 'duplicate':
      case 'ignored':
        return;
      case 'rejected':
        throw oneBotHttpError(
          400,
          new QunliError(OneBotErrorCode.InvalidPayload, `${outcome.problem.field} ${outcome.problem.message}`, {
            field: outcome.problem.field,
          }),
        );
      case 'unavailable':
        throw oneBotHttpError(
          503,
          new QunliError(OneBotErrorCode.Unavailable, 'the event log is unavailable; retry later'),
        );
    }
  }
}
