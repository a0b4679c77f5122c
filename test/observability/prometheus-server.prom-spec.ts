import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@app/testing';
import { assertPrometheusInstalled, PrometheusServer } from '../support/prometheus.js';

/** The harness the dashboards spec stands on: its port is chosen before Prometheus binds it. */
describe('PrometheusServer (the observability tier harness)', () => {
  let holder: Server | undefined;
  const held: Socket[] = [];
  let prometheus: PrometheusServer | undefined;

  afterEach(async () => {
    await prometheus?.stop();
    // The harness's readiness probe of the taken port connected to the holder: close that connection too.
    for (const socket of held) socket.destroy();
    await new Promise<void>((done) => (holder ? holder.close(() => done()) : done()));
  }, 30_000);

  it('starts on another port when the one it chose was taken before Prometheus could bind it', async () => {
    assertPrometheusInstalled();
    const taken = await freePort();
    const server = createServer((socket) => held.push(socket));
    holder = server;
    await new Promise<void>((done) => server.listen(taken, '127.0.0.1', done));
    const offered: number[] = [];
    prometheus = new PrometheusServer(join(tmpdir(), `qunli-prometheus-harness-${taken}`), [], [], async () => {
      const port = offered.length === 0 ? taken : await freePort();
      offered.push(port);
      return port;
    });

    await prometheus.start();

    expect(offered).toHaveLength(2);
    expect(prometheus.port).toBe(offered[1]);
    expect((await fetch(`${prometheus.url}/-/ready`)).ok).toBe(true);
  }, 90_000);
});
