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
});
