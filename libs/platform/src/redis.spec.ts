import { redisTarget } from './redis.js';

describe('REDIS_URL', () => {
  it('names one server by a plain URL', () => {
    expect(redisTarget('redis://127.0.0.1:6379/0')).toEqual({ cluster: false, url: 'redis://127.0.0.1:6379/0' });
  });

  it('names a Redis Cluster by redis+cluster:// seeds, with credentials and TLS', () => {
    expect(redisTarget('rediss+cluster://app:s%3Acret@10.0.0.1:7001,10.0.0.2:7002,10.0.0.3')).toEqual({
      cluster: true,
      tls: true,
      username: 'app',
      password: 's:cret',
      nodes: [
        { host: '10.0.0.1', port: 7001 },
        { host: '10.0.0.2', port: 7002 },
        { host: '10.0.0.3', port: 6379 },
      ],
    });
  });

  it('names a Redis Cluster by a comma list of plain URLs', () => {
    expect(redisTarget('redis://:pw@127.0.0.1:7001, redis://127.0.0.1:7002')).toEqual({
      cluster: true,
      tls: false,
      password: 'pw',
      nodes: [
        { host: '127.0.0.1', port: 7001 },
        { host: '127.0.0.1', port: 7002 },
      ],
    });
  });

  it('names a server on this machine by its Unix socket, with a database and credentials', () => {
    expect(redisTarget('unix:///run/redis/redis.sock')).toEqual({
      cluster: false,
      socket: { path: '/run/redis/redis.sock' },
    });
    expect(redisTarget('UNIX:///var/run/redis%20a/r.sock?db=3')).toEqual({
      cluster: false,
      socket: { path: '/var/run/redis a/r.sock', db: 3 },
    });
    expect(redisTarget('unix://app:p%40ss:word@/tmp/r.sock')).toEqual({
      cluster: false,
      socket: { path: '/tmp/r.sock', username: 'app', password: 'p@ss:word' },
    });
    expect(redisTarget('unix://:pw@/tmp/r.sock?db=0')).toEqual({
      cluster: false,
      socket: { path: '/tmp/r.sock', db: 0, password: 'pw' },
    });
  });

  it('refuses a socket URL without an absolute path or with a database that is not a number', () => {
    for (const url of ['unix://', 'unix:///', 'unix://redis.sock', 'unix://host/tmp/r.sock', 'unix://:pw@']) {
      expect(() => redisTarget(url)).toThrow('REDIS_URL names no socket');
    }
    for (const url of ['unix:///tmp/r.sock?db=', 'unix:///tmp/r.sock?db=-1', 'unix:///tmp/r.sock?db=1.5']) {
      expect(() => redisTarget(url)).toThrow("REDIS_URL's db must be a database number");
    }
    expect(() => redisTarget('unix://:50%@/tmp/r.sock')).toThrow('REDIS_URL has a malformed %-escape');
  });

  it('refuses a malformed %-escape in the credentials of a server or cluster URL, where ioredis would throw URIError', () => {
    for (const url of [
      'redis://:50%@127.0.0.1:6379',
      'redis://us%zzer:pw@127.0.0.1:6379/0',
      'redis+cluster://:5%0@a:7001,b:7002',
    ]) {
      expect(() => redisTarget(url)).toThrow('REDIS_URL has a malformed %-escape');
    }
    expect(redisTarget('redis://:p%40ss@127.0.0.1:6379')).toEqual({
      cluster: false,
      url: 'redis://:p%40ss@127.0.0.1:6379',
    });
  });
});
