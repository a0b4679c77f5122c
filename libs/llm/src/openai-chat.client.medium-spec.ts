import { setTimeout as sleep } from 'node:timers/promises';
import { LlmDouble, testConfig, UtilsLlmDouble } from '@app/testing';
import { OpenAiChatClient } from './openai-chat.client.js';

function client(double: LlmDouble, env: Record<string, string | number> = {}): OpenAiChatClient {
  return new OpenAiChatClient(
    testConfig('cognition', { OPENAI_BASE_URL: double.baseUrl, OPENAI_API_KEY: 'test', ...env }),
  );
}

const ASK = { role: 'replyer' as const, messages: [{ role: 'user' as const, content: '你在干嘛' }] };

/**
 * The connection to the LLM API outlives a pause between @s (ADR 0040). The double plays a provider whose front
 * end keeps idle connections a minute, so only the client decides when one is closed.
 */
describe('OpenAiChatClient connections', () => {
  let double: LlmDouble;

  beforeEach(async () => {
    double = await LlmDouble.start({ keepAliveMs: 60_000, replyText: () => '在看书' });
  });

  afterEach(async () => {
    await double.close();
  });

  it('sends a call made 5 s after the last on the same connection (undici alone closes it after 4 s)', async () => {
    const llm = client(double);
    expect((await llm.complete(ASK)).content).toBe('在看书');
    await sleep(5_000);
    expect((await llm.complete(ASK)).content).toBe('在看书');
    expect(double.connections).toBe(1);
  }, 20_000);

  it('opens a new connection once QUNLI_LLM_KEEP_ALIVE_MS has passed', async () => {
    const llm = client(double, { QUNLI_LLM_KEEP_ALIVE_MS: 1000 });
    await llm.complete(ASK);
    await sleep(2_500);
    expect((await llm.complete(ASK)).content).toBe('在看书');
    expect(double.connections).toBe(2);
  }, 20_000);
});

/** The utils double (benchmarks' memory and jargon model) answers the client streamed and not. */
describe('OpenAiChatClient against the utils double', () => {
  let double: UtilsLlmDouble;

  beforeEach(async () => {
    double = await UtilsLlmDouble.start((tool) => ({ tool, summary: '在聊火锅' }));
  });

  afterEach(async () => {
    await double.close();
  });

  it.each(['true', 'false'])('returns the tool call and its usage with QUNLI_LLM_STREAM=%s', async (stream) => {
    const llm = new OpenAiChatClient(
      testConfig('life-director', {
        OPENAI_BASE_URL: double.baseUrl,
        OPENAI_API_KEY: 'test',
        QUNLI_LLM_STREAM: stream,
      }),
    );
    const answer = await llm.complete({
      role: 'utils',
      messages: [{ role: 'user', content: '整理一下' }],
      tools: [{ name: 'record_memory', description: '记录', parameters: { type: 'object', properties: {} } }],
      toolChoice: 'required',
    });
    expect(answer.toolCalls.map((c) => [c.name, JSON.parse(c.arguments) as unknown])).toEqual([
      ['record_memory', { tool: 'record_memory', summary: '在聊火锅' }],
    ]);
    expect(answer.usage.promptTokens).toBe(double.promptTokens);
    expect(answer.usage.completionTokens).toBe(double.completionTokens);
  });
});
