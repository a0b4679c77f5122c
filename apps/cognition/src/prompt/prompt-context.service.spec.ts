import type { PromptContextProvider, PromptContextRequest } from '@app/contracts';
import { Metrics } from '@app/platform';
import { PromptContextService } from './prompt-context.service.js';

const REQUEST: PromptContextRequest = {
  episodeId: 'ep-1',
  groupId: '100',
  selfId: '10000',
  senderId: '200',
  senderName: '小明',
  text: '你在干嘛',
  now: new Date('2026-12-05T10:00:00Z'),
};

function provider(section: PromptContextProvider['section'], provide: () => Promise<string | null>) {
  return { section, provide } satisfies PromptContextProvider;
}

async function failuresOf(metrics: Metrics, section: string): Promise<number> {
  const text = await metrics.scrape();
  const line = text.split('\n').find((l) => l.startsWith(`qunli_prompt_context_failures_total{section="${section}"`));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** `qunli_prompt_section_seconds_count` by `section/outcome`. */
async function timedOf(metrics: Metrics): Promise<Record<string, number>> {
  const timed: Record<string, number> = {};
  for (const line of (await metrics.scrape()).split('\n')) {
    const found = /^qunli_prompt_section_seconds_count\{(.*)\} (\d+)$/.exec(line);
    if (!found) continue;
    const section = /section="([^"]+)"/.exec(found[1]!)![1];
    const outcome = /outcome="([^"]+)"/.exec(found[1]!)![1];
    timed[`${section}/${outcome}`] = Number(found[2]);
  }
  return timed;
}

describe('PromptContextService', () => {
  it('joins the sections of every provider, two providers of one section in registration order', async () => {
    const metrics = new Metrics('cognition', false);
    const service = new PromptContextService(metrics, [
      provider('memory', () => Promise.resolve('【相关记忆】昨天聊了火锅')),
      provider('activity', () => Promise.resolve('【你正在做的事】在看书')),
      provider('memory', () => Promise.resolve('小明喜欢辣')),
      provider('jargon', () => Promise.resolve(null)),
    ]);
    expect(await service.collect(REQUEST)).toEqual({
      memory: '【相关记忆】昨天聊了火锅\n小明喜欢辣',
      activity: '【你正在做的事】在看书',
    });
    // Every provider's time is observed, an empty answer included.
    expect(await timedOf(metrics)).toEqual({ 'memory/ok': 2, 'activity/ok': 1, 'jargon/ok': 1 });
  });

  it('leaves out a provider that fails or is too slow, counts it, and clears the timeout of the others', async () => {
    const metrics = new Metrics('cognition', false);
    const service = new PromptContextService(metrics, [
      provider('sender', () => Promise.reject(new Error('connection terminated'))),
      provider('jargon', () => new Promise<string>(() => undefined)),
      provider('activity', () => Promise.resolve('【你正在做的事】在看书')),
    ]);
    service.timeoutMs = 50;
    const original = globalThis.clearTimeout;
    let cleared = 0;
    globalThis.clearTimeout = (timer?: Parameters<typeof clearTimeout>[0]) => {
      cleared++;
      original(timer);
    };
    try {
      expect(await service.collect(REQUEST)).toEqual({ activity: '【你正在做的事】在看书' });
    } finally {
      globalThis.clearTimeout = original;
    }
    expect(await failuresOf(metrics, 'sender')).toBe(1);
    expect(await failuresOf(metrics, 'jargon')).toBe(1);
    expect(await failuresOf(metrics, 'activity')).toBe(0);
    expect(await timedOf(metrics)).toEqual({ 'sender/failed': 1, 'jargon/timeout': 1, 'activity/ok': 1 });
    // One per provider, the one that answered in time included.
    expect(cleared).toBe(3);
  });

  it('stops asking a provider once its registration is undone', async () => {
    const service = new PromptContextService(new Metrics('cognition', false));
    const undo = service.register(provider('memory', () => Promise.resolve('记忆')));
    expect(await service.collect(REQUEST)).toEqual({ memory: '记忆' });
    undo();
    expect(await service.collect(REQUEST)).toEqual({});
  });
});
