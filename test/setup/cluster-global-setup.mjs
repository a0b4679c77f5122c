import { startRedisCluster } from '../../tools/lib/redis-cluster.mjs';

/*
 * The `cluster` tier: a local three-master Redis Cluster made for the run, named to every test (and to the app
 * processes they start) by `REDIS_URL`; torn down by `cluster-global-teardown.mjs`.
 */
export default async function setup() {
  const cluster = await startRedisCluster(3);
  globalThis.qunliRedisCluster = cluster;
  globalThis.process.env.REDIS_URL = cluster.url;
}
