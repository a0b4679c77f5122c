import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface ServiceUrl {
  protocol: string;
  host?: string;
  port?: number;
  path?: string;
  user: string;
  password: string;
}
interface Probe {
  state: 'up' | 'down' | 'refused';
  reason?: string;
}
const services = (await import(join(import.meta.dirname, 'services.mjs'))) as {
  parseServiceUrl(url: string, defaultPort: number, setting?: string): ServiceUrl;
  redact(url: string): string;
  pingRedis(url: string): Promise<Probe>;
};

/** `npm run up`'s check of REDIS_URL when it names a Unix socket, as the apps take it (ADR 0048). */
describe('npm run up and a Redis on a Unix socket', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qunli-up-socket-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the socket path and credentials, and keeps the password out of what it prints', () => {
    expect(services.parseServiceUrl('unix://app:p%40ss@/run/redis/redis.sock?db=2', 6379)).toEqual({
      protocol: 'unix:',
      path: '/run/redis/redis.sock',
      user: 'app',
      password: 'p@ss',
    });
    expect(services.parseServiceUrl('redis://127.0.0.1:6390', 6379)).toMatchObject({ host: '127.0.0.1', port: 6390 });
    expect(services.redact('unix://app:p%40ss@/run/redis/redis.sock?db=2')).toBe(
      'unix://app:***@/run/redis/redis.sock?db=2',
    );
    expect(services.redact('unix://:pw@/run/redis.sock')).toBe('unix://:***@/run/redis.sock');
    expect(services.redact('unix:///run/redis.sock')).toBe('unix:///run/redis.sock');
  });

  it('reads a PostgreSQL socket directory as pg does, from ?host= or an escaped host', () => {
    expect(services.parseServiceUrl('postgres://app:pw@localhost/qunli?host=/var/run/postgresql', 5432)).toEqual({
      protocol: 'postgres:',
      path: '/var/run/postgresql',
      user: 'app',
      password: 'pw',
    });
    expect(services.parseServiceUrl('postgres://%2Fvar%2Frun%2Fpostgresql/qunli', 5432)).toMatchObject({
      path: '/var/run/postgresql',
    });
    // A `host` parameter that names a machine overrides the URL's host, as in pg.
    expect(services.parseServiceUrl('postgres://localhost/qunli?host=db.internal', 5432)).toMatchObject({
      host: 'db.internal',
      port: 5432,
    });
    expect(services.parseServiceUrl('postgres://localhost:5433/qunli', 5432)).toMatchObject({
      host: 'localhost',
      port: 5433,
    });
  });

  it('names a malformed %-escape and the setting it is in, without printing the password', () => {
    for (const url of ['unix://:pa%zzss@/run/redis.sock', 'unix:///run/re%dis.sock', 'redis://:pa%zz@127.0.0.1:6379']) {
      let message = '';
      try {
        services.parseServiceUrl(url, 6379, 'REDIS_URL');
      } catch (error) {
        message = (error as Error).message;
        expect((error as Error).name).toBe('UserFacingError');
      }
      expect(message).toBe('REDIS_URL has a malformed %-escape (a % not followed by two hex digits): write % as %25');
    }
  });

  it('pings through the socket, authenticating first, and says down when nothing listens there', async () => {
    const path = join(dir, 'redis.sock');
    const heard: string[] = [];
    const server = net.createServer((client) => {
      client.on('data', (chunk) => {
        heard.push(chunk.toString('utf8'));
        const text = heard.join('');
        if (text.includes('PING')) client.end(text.includes('AUTH') ? '+OK\r\n+PONG\r\n' : '-NOAUTH\r\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      expect(await services.pingRedis(`unix://:s3cret@${path}`)).toEqual({ state: 'up' });
      expect(heard.join('')).toContain('$4\r\nAUTH\r\n$6\r\ns3cret\r\n');
      heard.length = 0;
      expect(await services.pingRedis(`unix://${path}`)).toEqual({ state: 'refused', reason: 'NOAUTH' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect((await services.pingRedis(`unix://${path}`)).state).toBe('down');
  });
});
