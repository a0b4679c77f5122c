import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  classifyEnvelope,
  classifyHttpResponse,
  classifyTransportError,
  type ApiOutcome,
} from './api-outcome.rules.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/onebot/api-response');

/** Every captured response and what a sender must make of it. A new fixture fails the test until it is listed. */
const EXPECTED: Record<string, { kind: ApiOutcome['kind']; code?: string; data?: unknown }> = {
  'async-spec-derived.json': { kind: 'unknown', code: 'ONEBOT.ASYNC' },
  'delete-msg-failed-1200-1173.json': { kind: 'unknown', code: 'ONEBOT.TIMEOUT' },
  'delete-msg-ok-no-data-1051.json': { kind: 'ok', data: undefined },
  'failed-1404-unsupported-api-252.json': { kind: 'failed', code: 'ONEBOT.UNSUPPORTED' },
  'failed-200-http-timeout-600.json': { kind: 'unknown', code: 'ONEBOT.TIMEOUT' },
  'failed-400-http-validation-372.json': { kind: 'failed', code: 'ONEBOT.BAD_REQUEST' },
  'failed-retcode100-gocq.json': { kind: 'failed', code: 'ONEBOT.REFUSED' },
  'get-forward-msg-ok-spec-assembled.json': { kind: 'ok' },
  'get-msg-ok-recalled-empty-351.json': { kind: 'ok' },
  'send-group-forward-msg-ok-stream-1447.json': { kind: 'ok', data: { message_id: 1068502020 } },
  'send-group-msg-failed-1200-timeout-1410.json': { kind: 'unknown', code: 'ONEBOT.TIMEOUT' },
  'send-private-msg-failed-1200-napcat.json': { kind: 'unknown', code: 'ONEBOT.TIMEOUT' },
  'send-private-msg-ok-napcat.json': { kind: 'ok', data: { message_id: 123039305 } },
};

describe('OneBot API outcome classification', () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));

  it('has an expectation for every captured response', () => {
    expect(files.sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(files)('classifies %s as a sender must treat it', (file) => {
    const text = readFileSync(join(FIXTURES, file), 'utf8');
    const expected = EXPECTED[file]!;
    const outcome = classifyHttpResponse(200, text);
    expect(outcome.kind).toBe(expected.kind);
    if (outcome.kind === 'ok') {
      if ('data' in expected) expect(outcome.data).toEqual(expected.data);
    } else {
      expect(outcome.code).toBe(expected.code);
      expect(outcome.retcode).toBe(JSON.parse(text).retcode);
      expect(outcome.message.length).toBeGreaterThan(0);
    }
  });

  it('keeps what the implementation said: NapCat message, go-cqhttp msg', () => {
    const napcat = classifyEnvelope({ status: 'failed', retcode: 1200, message: '无法获取用户信息', wording: 'x' });
    expect(napcat).toMatchObject({ kind: 'unknown', message: '无法获取用户信息' });
    const gocq = classifyEnvelope({ status: 'failed', retcode: 100, msg: 'SEND_MSG_API_ERROR', wording: '' });
    expect(gocq).toMatchObject({ kind: 'failed', message: 'SEND_MSG_API_ERROR' });
  });

  it('treats a retcode it cannot interpret as unknown, never as failed or ok', () => {
    expect(classifyEnvelope({ status: 'failed', retcode: 1500 })).toMatchObject({
      kind: 'unknown',
      code: 'ONEBOT.UNRECOGNISED_RETCODE',
    });
  });

  it('reads HTTP status codes: 4xx refused, 5xx unknown, 2xx without an envelope unknown', () => {
    expect(classifyHttpResponse(401, '')).toMatchObject({
      kind: 'failed',
      code: 'ONEBOT.UNAUTHORIZED',
      httpStatus: 401,
    });
    expect(classifyHttpResponse(403, '{"message":"token verify failed"}')).toMatchObject({
      kind: 'failed',
      code: 'ONEBOT.UNAUTHORIZED',
    });
    expect(classifyHttpResponse(404, 'Not Found')).toMatchObject({ kind: 'failed', code: 'ONEBOT.UNSUPPORTED' });
    expect(classifyHttpResponse(400, '{"status":"failed","retcode":400}')).toMatchObject({
      kind: 'failed',
      code: 'ONEBOT.HTTP_REJECTED',
      retcode: 400,
    });
    expect(classifyHttpResponse(502, 'Bad Gateway')).toMatchObject({ kind: 'unknown', code: 'ONEBOT.SERVER_ERROR' });
    expect(classifyHttpResponse(200, '<html>')).toMatchObject({ kind: 'unknown', code: 'ONEBOT.BAD_RESPONSE' });
    expect(classifyHttpResponse(200, '{"data":{}}')).toMatchObject({ kind: 'unknown', code: 'ONEBOT.BAD_RESPONSE' });
    expect(classifyHttpResponse(200, '{"status":"failed","retcode":1400}')).toMatchObject({
      kind: 'failed',
      httpStatus: 200,
    });
  });

  it('calls only errors before the request left unreachable', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT']) {
      expect(classifyTransportError(code, 'x')).toMatchObject({ kind: 'unreachable', code: 'ONEBOT.UNREACHABLE' });
    }
    for (const code of ['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']) {
      expect(classifyTransportError(code, 'x')).toMatchObject({ kind: 'unknown', code: 'ONEBOT.TIMEOUT' });
    }
    for (const code of ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']) {
      expect(classifyTransportError(code, 'x')).toMatchObject({ kind: 'unknown', code: 'ONEBOT.CONNECTION_LOST' });
    }
    expect(classifyTransportError(undefined, 'odd')).toMatchObject({ kind: 'unknown', code: 'ONEBOT.TRANSPORT' });
  });
});
