export default async function teardown() {
  await globalThis.qunliRedisCluster?.stop();
}
