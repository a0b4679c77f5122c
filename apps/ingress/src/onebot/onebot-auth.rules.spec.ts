import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { signBody as signatureOf } from '@app/onebot';
import { checkAccessToken, checkSignature, presentedToken } from './onebot-auth.rules.js';

const FIXTURES = join(import.meta.dirname, '../../../../test/fixtures/onebot');
const body = readFileSync(join(FIXTURES, 'message-group/text-napcat.json'));
const secret = 'hunter2';
const hex = createHmac('sha1', secret).update(body).digest('hex');

describe('X-Signature (HMAC-SHA1 of the raw body)', () => {
  it('accepts the right signature, in either hex case', () => {
    expect(signatureOf(secret, body)).toBe(`sha1=${hex}`);
    expect(checkSignature(secret, body, `sha1=${hex}`)).toBe('ok');
    expect(checkSignature(secret, body, `sha1=${hex.toUpperCase()}`)).toBe('ok');
  });

  it('refuses a signature of another body or another secret', () => {
    const other = Buffer.concat([body, Buffer.from(' ')]);
    expect(checkSignature(secret, other, `sha1=${hex}`)).toBe('invalid');
    expect(checkSignature('other', body, `sha1=${hex}`)).toBe('invalid');
  });

  it('refuses a wrong algorithm prefix, a bare digest and a malformed digest', () => {
    const sha256 = createHmac('sha256', secret).update(body).digest('hex');
    expect(checkSignature(secret, body, `sha256=${sha256}`)).toBe('invalid');
    expect(checkSignature(secret, body, `md5=${hex}`)).toBe('invalid');
    expect(checkSignature(secret, body, hex)).toBe('invalid');
    expect(checkSignature(secret, body, `sha1=${hex.slice(2)}`)).toBe('invalid');
    expect(checkSignature(secret, body, `sha1=${'z'.repeat(40)}`)).toBe('invalid');
  });

  it('reports a missing signature apart from a wrong one', () => {
    expect(checkSignature(secret, body, undefined)).toBe('missing');
    expect(checkSignature(secret, body, '')).toBe('missing');
  });

  it('passes everything when no secret is configured', () => {
    expect(checkSignature(undefined, body, undefined)).toBe('ok');
    expect(checkSignature('', body, 'garbage')).toBe('ok');
  });
});

describe('access token', () => {
  it('reads Bearer and Token schemes, and the query parameter when there is no header', () => {
    expect(presentedToken('Bearer abc', undefined)).toBe('abc');
    expect(presentedToken('bearer  abc ', undefined)).toBe('abc');
    expect(presentedToken('Token abc', undefined)).toBe('abc');
    expect(presentedToken(undefined, 'abc')).toBe('abc');
    expect(presentedToken(undefined, undefined)).toBeUndefined();
  });

  it('lets the header win over the query, and treats another scheme as no token', () => {
    expect(presentedToken('Bearer wrong', 'right')).toBe('wrong');
    expect(presentedToken('Basic YWJj', undefined)).toBe('');
    // NapCat writes `Bearer ` with nothing after it when it has no token: no token, the query one counts.
    expect(presentedToken('Bearer ', undefined)).toBeUndefined();
    expect(presentedToken('Bearer ', 'right')).toBe('right');
  });

  it('checks the token', () => {
    expect(checkAccessToken('s3cret', 's3cret')).toBe('ok');
    expect(checkAccessToken('s3cret', 's3cre')).toBe('invalid');
    expect(checkAccessToken('s3cret', '')).toBe('invalid');
    expect(checkAccessToken('s3cret', undefined)).toBe('missing');
    expect(checkAccessToken(undefined, undefined)).toBe('ok');
    expect(checkAccessToken(undefined, 'anything')).toBe('ok');
  });
});
