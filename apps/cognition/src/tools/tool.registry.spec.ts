import type { Tool, ToolContext } from '@app/contracts';
import { ToolRegistry } from './tool.registry.js';

function tool(name: string, extra: Partial<Tool> = {}): Tool<never> {
  return {
    name,
    description: `工具 ${name}`,
    inputSchema: {},
    visibility: 'core',
    permission: 'member',
    timeoutMs: 200,
    sideEffect: false,
    idempotent: true,
    maxResultChars: 100,
    maxRetries: 0,
    requiresConfirmation: false,
    source: 'test',
    validate: (args) => ({ ok: true, value: args as Record<string, unknown> }),
    execute: async () => ({ ok: true, text: 'ok' }),
    ...extra,
  } as Tool<never>;
}

const context: Omit<ToolContext, 'signal'> = {
  episodeId: 'ep',
  toolCallId: 'c',
  groupId: '1',
  selfId: '10001',
  senderId: '2',
  senderRole: 'member',
  now: new Date(),
};

describe('tool registry', () => {
  it('registers, refuses duplicates and bad names, and unregisters cleanly', () => {
    const registry = new ToolRegistry();
    const off = registry.register(tool('look'));
    expect(() => registry.register(tool('look'))).toThrow(expect.objectContaining({ code: 'TOOL.DUPLICATE' }));
    expect(() => registry.register(tool('Bad-Name'))).toThrow(expect.objectContaining({ code: 'TOOL.INVALID_NAME' }));
    off();
    expect(registry.get('look')).toBeUndefined();
    registry.register(tool('a', { source: 'mcp:x' }));
    registry.register(tool('b', { source: 'mcp:x' }));
    expect(registry.unregisterSource('mcp:x')).toBe(2);
    expect(registry.all()).toEqual([]);
  });

  it('lists core tools and found deferred ones, only those the role may use; searches deferred ones', () => {
    const registry = new ToolRegistry();
    registry.register(tool('core_one'));
    registry.register(tool('hidden_weather', { visibility: 'deferred', description: '查天气' }));
    registry.register(tool('admin_weather', { visibility: 'deferred', description: '改天气', permission: 'admin' }));
    expect(registry.listed('member', new Set()).map((t) => t.name)).toEqual(['core_one']);
    expect(registry.listed('member', new Set(['hidden_weather', 'admin_weather'])).map((t) => t.name)).toEqual([
      'core_one',
      'hidden_weather',
    ]);
    expect(registry.search('天气', 5, 'member').map((t) => t.name)).toEqual(['hidden_weather']);
    expect(
      registry
        .search('天气', 5, 'admin')
        .map((t) => t.name)
        .sort(),
    ).toEqual(['admin_weather', 'hidden_weather']);
  });

  it('times out a tool that ignores its signal, and retries only retryable failures up to the cap', async () => {
    const registry = new ToolRegistry();
    const stuck = tool('stuck', { execute: () => new Promise(() => undefined) });
    const slow = await registry.run(stuck, {}, context, new AbortController().signal);
    expect(slow.outcome).toMatchObject({ ok: false, error: { code: 'TOOL.TIMEOUT' } });
    let calls = 0;
    const flaky = tool('flaky', {
      maxRetries: 2,
      execute: async () => {
        calls++;
        return calls < 3
          ? { ok: false, text: 'busy', error: { code: 'X', message: 'busy', retryable: true } }
          : { ok: true, text: 'done' };
      },
    });
    expect((await registry.run(flaky, {}, context, new AbortController().signal)).outcome.ok).toBe(true);
    expect(calls).toBe(3);
    const throws = tool('throws', { execute: async () => Promise.reject(new Error('boom')) });
    expect((await registry.run(throws, {}, context, new AbortController().signal)).outcome).toMatchObject({
      ok: false,
      error: { code: 'TOOL.FAILED' },
    });
  });
});
