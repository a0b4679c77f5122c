import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * OneBot v11 authentication of what an implementation sends us. The access token comes as
 * `Authorization: Bearer <token>` (older implementations write `Token <token>`) or `?access_token=`; the HMAC
 * signature as `X-Signature: sha1=<hex HMAC-SHA1 of the raw body>`. Both compare in constant time.
 */

export type TokenCheck = 'ok' | 'missing' | 'invalid';
export type SignatureCheck = 'ok' | 'missing' | 'invalid';

function sameSecret(given: string, expected: string): boolean {
  // Hash both sides first: timingSafeEqual needs equal lengths, and comparing digests leaks nothing about length.
  const a = createHmac('sha256', 'qunli-token-compare').update(given).digest();
  const b = createHmac('sha256', 'qunli-token-compare').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * The token a request carries: the Authorization header wins over the query parameter. An empty `Bearer ` (what
 * NapCat writes when it has no token configured) carries no token: the query parameter, if any, is used instead.
 * A header that is neither `Bearer <token>` nor `Token <token>` presents a wrong token ('').
 */
export function presentedToken(authorization: string | undefined, queryToken: unknown): string | undefined {
  const query = typeof queryToken === 'string' ? queryToken : undefined;
  if (authorization === undefined) return query;
  const header = authorization.trim();
  if (/^(?:Bearer|Token)?$/i.test(header)) return query;
  const match = /^(?:Bearer|Token)\s+(.+)$/i.exec(header);
  return match?.[1]?.trim() ?? '';
}

/** `expected` undefined means no token is configured: everything passes. */
export function checkAccessToken(expected: string | undefined, presented: string | undefined): TokenCheck {
  if (expected === undefined || expected === '') return 'ok';
  if (presented === undefined) return 'missing';
  return sameSecret(presented, expected) ? 'ok' : 'invalid';
}

/** `secret` undefined means no signing is configured: everything passes. */
export function checkSignature(secret: string | undefined, body: Buffer, header: string | undefined): SignatureCheck {
  if (secret === undefined || secret === '') return 'ok';
  if (header === undefined || header === '') return 'missing';
  const match = /^sha1=([0-9a-f]{40})$/i.exec(header.trim());
  if (!match?.[1]) return 'invalid';
  const given = Buffer.from(match[1].toLowerCase(), 'hex');
  const expected = createHmac('sha1', secret).update(body).digest();
  return timingSafeEqual(given, expected) ? 'ok' : 'invalid';
}
