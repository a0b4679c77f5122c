import { FakeOneBot, LlmDouble, testRedis, TEST_REDIS_URL } from '@app/testing';
import { FLOOR_STAGES, hopFloor } from './hop-floor.js';

describe('the hop floor: an @ through processes that only hand it on', () => {
  it('answers every @ through the edge, a stream, two BullMQ workers and the LLM endpoint, and leaves no key', async () => {
    const llm = await LlmDouble.start({
      replyText: (body) => `答：${/问题#(\d+)/.exec(JSON.stringify(body.messages))?.[1] ?? '?'}`,
    });
    const onebot = new FakeOneBot({ accessToken: 'floor-token', selfId: '10001' });
    await onebot.start();
    const redis = testRedis();
    try {
      const result = await hopFloor({
        redisUrl: TEST_REDIS_URL,
        llmBaseUrl: llm.baseUrl,
        onebot,
        onebotToken: 'floor-token',
        selfId: '10001',
        backgroundPerSec: 50,
        groups: 10,
        directs: 5,
        warmupDirects: 2,
        warmupMs: 0,
        spacingMs: 20,
      });
      expect(result).toMatchObject({ directs: 5, answered: 5 });
      // Each @ asked the endpoint twice, one after the other; ambient messages never reached it.
      expect(llm.completionRequests).toHaveLength(2 * (5 + 2));
      // OneBot got each answer once, in its @'s group, and nothing for the ambient messages.
      expect(onebot.sentMessages.map((m) => m.text).sort()).toEqual(
        [0, 1, 2, 3, 4, 5, 6].map((k) => `答：${1_000_000 + k}`).sort(),
      );
      // The floor asks @ number k (问题#1000000+k) in group 300000 + (k × 7919 mod groups).
      for (const m of onebot.sentMessages) {
        const k = Number(/答：(\d+)/.exec(m.text)![1]) - 1_000_000;
        expect({ action: m.action, groupId: m.groupId }).toEqual({
          action: 'send_group_msg',
          groupId: String(300_000 + ((k * 7919) % 10)),
        });
      }
      // Every measured @ passed every hop (a hop it skipped would leave its stage without a figure).
      for (const stage of FLOOR_STAGES) expect(Number.isFinite(result.stagesP50Ms[stage])).toBe(true);
      expect(Number.isFinite(result.p50Ms)).toBe(true);
      expect(await redis.keys('floor-*')).toEqual([]);
    } finally {
      await redis.quit();
      await onebot.stop();
      await llm.close();
    }
  }, 120_000);
});
