import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config.js';

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

/** Every directory these tests write, removed when they are done. */
const root = mkdtempSync(join(tmpdir(), 'qunli-config-'));
const empty = join(root, 'empty');
mkdirSync(empty);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('configuration', () => {
  it('has the operating contract defaults', () => {
    const config = loadConfig('ingress', { env: {}, cwd: empty });
    expect(config.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(config.DATABASE_URL).toBe('postgres://postgres@127.0.0.1:5432/qunli');
    expect([config.INGRESS_PORT, config.SCHEDULER_PORT, config.COGNITION_PORT]).toEqual([8080, 8081, 8082]);
    expect([config.OUTBOUND_PORT, config.LIFE_DIRECTOR_PORT, config.PANEL_PORT]).toEqual([8083, 8084, 8085]);
    expect(config.QUNLI_TIME_SCALE).toBe(1);
    expect(config.groups).toBe('*');
    expect(config.llmOffline).toBe(true);
  });

  it('refuses a DATABASE_URL that TypeORM could not read, and never shows a URL setting with its password', () => {
    const bad = (env: Record<string, string>) => problemsOf(() => loadConfig('ingress', { env, cwd: empty }));
    expect(bad({ DATABASE_URL: 'postgres://qunli:50%@127.0.0.1:5432/qunli' })).toEqual([
      'DATABASE_URL has a malformed %-escape (write a % in a password as %25)',
    ]);
    expect(bad({ DATABASE_URL: 'postgres://qunli:pw@[::1/qunli' })).toEqual([
      'DATABASE_URL is not a valid URL (postgres://user:password@host:5432/database)',
    ]);
    expect(bad({ REDIS_URL: 'redis://:50%@127.0.0.1:6379' })).toEqual([
      'REDIS_URL has a malformed %-escape (write a % in a password as %25)',
    ]);
    const [shown] = bad({ DATABASE_URL: 'mysql://qunli:s3cret@db/qunli' });
    expect(shown).toContain('"mysql://qunli:***@db/qunli"');
    expect(shown).not.toContain('s3cret');
    // A socket directory and an escaped password are what pg reads: both pass.
    for (const url of ['postgres://qunli@localhost/qunli?host=/var/run/postgresql', 'postgres://q:p%25w@h/qunli']) {
      expect(() => loadConfig('ingress', { env: { DATABASE_URL: url }, cwd: empty })).not.toThrow();
    }
  });

  it('names every bad and unknown setting in one error, with a suggestion for a typo', () => {
    const problems = problemsOf(() =>
      loadConfig('ingress', {
        env: { QUNLI_PARTITONS: '4', QUNLI_PARTITIONS: 'x', OPENAI_BASE_URL: 'notaurl', QUNLI_GROUPS: '1,a' },
        cwd: empty,
      }),
    );
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toContain(
      'unknown setting QUNLI_PARTITONS in the environment (did you mean QUNLI_PARTITIONS?)',
    );
    expect(problems.join('\n')).toContain('QUNLI_PARTITIONS must be a number (got "x")');
    expect(problems.join('\n')).toMatch(/OPENAI_BASE_URL must be an http\(s\) URL/);
    expect(problems.join('\n')).toMatch(/QUNLI_GROUPS must be \* or a comma list of group ids/);
  });

  it('takes a Redis Unix socket and names a socket URL it cannot use', () => {
    const config = loadConfig('ingress', { env: { REDIS_URL: 'unix:///run/redis/redis.sock?db=2' }, cwd: empty });
    expect(config.REDIS_URL).toBe('unix:///run/redis/redis.sock?db=2');
    expect(problemsOf(() => loadConfig('ingress', { env: { REDIS_URL: 'unix://redis.sock' }, cwd: empty }))).toEqual([
      'REDIS_URL names no socket: write unix:///absolute/path/to/redis.sock[?db=N]',
    ]);
    expect(
      problemsOf(() => loadConfig('ingress', { env: { REDIS_URL: 'unix://:s3cret@/run/r.sock?db=x' }, cwd: empty })),
    ).toEqual(['REDIS_URL\'s db must be a database number (got "x")']);
    const [problem] = problemsOf(() => loadConfig('ingress', { env: { REDIS_URL: '/run/redis.sock' }, cwd: empty }));
    expect(problem).toMatch(/^REDIS_URL must be .*a Unix socket \(unix:\/\/\/run\/redis\/redis\.sock\)/);
  });

  it('ignores environment variables of other programs but not unknown QUNLI_ ones', () => {
    expect(() => loadConfig('ingress', { env: { HOME: '/root', PATH: '/bin' }, cwd: empty })).not.toThrow();
    expect(problemsOf(() => loadConfig('ingress', { env: { QUNLI_WHATEVER: '1' }, cwd: empty }))).toHaveLength(1);
  });

  it('reads qunli.yaml, lets the environment win, and rejects unknown keys in the file', () => {
    const dir = mkdtempSync(join(root, 'yaml-'));
    writeFileSync(join(dir, 'qunli.yaml'), 'QUNLI_PARTITIONS: 8\nQUNLI_NICKNAMES: 小满, 满满\nINGRESS_PORT: 9000\n');
    const config = loadConfig('ingress', { env: { INGRESS_PORT: '9100' }, cwd: dir });
    expect(config.QUNLI_PARTITIONS).toBe(8);
    expect(config.nicknames).toEqual(['小满', '满满']);
    expect(config.INGRESS_PORT).toBe(9100);

    writeFileSync(join(dir, 'qunli.yaml'), 'REDIS_URLL: redis://x\n');
    expect(problemsOf(() => loadConfig('ingress', { env: {}, cwd: dir }))[0]).toMatch(
      /unknown setting REDIS_URLL in .*qunli\.yaml \(did you mean REDIS_URL\?\)/,
    );
  });

  it('requires what an app cannot run without', () => {
    expect(problemsOf(() => loadConfig('outbound', { env: { QUNLI_SEND_TRANSPORT: 'http' }, cwd: empty }))).toEqual([
      'ONEBOT_HTTP_API_URL is required when QUNLI_SEND_TRANSPORT is http',
    ]);
    // Without an HTTP API or a forward WebSocket, outbound sends over the reverse WebSocket through ingress.
    expect(() => loadConfig('outbound', { env: {}, cwd: empty })).not.toThrow();
    expect(() => loadConfig('ingress', { env: {}, cwd: empty })).not.toThrow();
  });

  it('requires a shared epoch when product time runs faster than wall time', () => {
    expect(problemsOf(() => loadConfig('scheduler', { env: { QUNLI_TIME_SCALE: '60' }, cwd: empty }))[0]).toMatch(
      /QUNLI_TIME_EPOCH is required when QUNLI_TIME_SCALE is 60/,
    );
    const config = loadConfig('scheduler', {
      env: { QUNLI_TIME_SCALE: '60', QUNLI_TIME_EPOCH: '2026-12-01T00:00:00Z' },
      cwd: empty,
    });
    expect(config.timeEpochMs).toBe(Date.parse('2026-12-01T00:00:00Z'));
    expect(
      problemsOf(() => loadConfig('scheduler', { env: { QUNLI_TIME_EPOCH: 'yesterday' }, cwd: empty }))[0],
    ).toMatch(/QUNLI_TIME_EPOCH must be an ISO 8601 time/);
  });

  it('complains when QUNLI_CONFIG points at nothing', () => {
    expect(problemsOf(() => loadConfig('ingress', { env: { QUNLI_CONFIG: '/nonexistent/q.yaml' } }))[0]).toMatch(
      /QUNLI_CONFIG points at \/nonexistent\/q\.yaml, which does not exist/,
    );
  });
});
