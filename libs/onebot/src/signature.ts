import { createHmac, timingSafeEqual } from 'node:crypto';

/** `X-Signature` of an HTTP POST report: `sha1=` + hex HMAC-SHA1 of the raw body with the shared secret. */
export function signBody(secret: string, rawBody: string | Buffer): string {
  return `sha1=${createHmac('sha1', secret).update(rawBody).digest('hex')}`;
}

export function verifySignature(secret: string, rawBody: string | Buffer, header: string | undefined): boolean {
  if (header === undefined) return false;
  const expected = Buffer.from(signBody(secret, rawBody));
  const given = Buffer.from(header.trim().toLowerCase());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
