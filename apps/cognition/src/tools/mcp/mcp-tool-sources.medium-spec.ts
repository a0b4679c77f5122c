import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventKind, type EpisodeStepPayload } from '@app/contracts';
import { MCP_TEST_SERVER, offeredTools } from '@app/testing';
import {
  call,
  CognitionHarness,
  forReplyer,
  PLANNER_MODEL,
  promptText,
} from '../../../../../test/cognition/cognition.harness.js';
import { McpToolSources } from './mcp-tool-sources.js';

/*
 * An MCP server started by the test (stdio, built with the official SDK): its tools are found by tool_search,
 * called with validated arguments, time out cleanly when the server hangs, and disappear when it goes away.
 */

let h: CognitionHarness;
let dir: string;
let configFile: string;
const planner = () => h.double.completionRequests.filter((r) => r.body?.model === PLANNER_MODEL);

function serversYaml(servers: Record<string, { timeoutMs?: number; permission?: string }>): string {
  const lines = ['servers:'];
  for (const [name, options] of Object.entries(servers)) {
    lines.push(
      `  ${name}:`,
      '    transport: stdio',
      `    command: ${process.execPath}`,
      `    args: [${JSON.stringify(MCP_TEST_SERVER)}]`,
    );
    lines.push('    env:', `      MCP_TEST_GONE_FILE: ${JSON.stringify(join(dir, `${name}.gone`))}`);
    lines.push(`      MCP_TEST_PID_FILE: ${JSON.stringify(join(dir, `${name}.pid`))}`);
    lines.push(`      MCP_TEST_LOG_FILE: ${JSON.stringify(join(dir, `${name}.log`))}`);
    if (options.timeoutMs) lines.push(`    timeoutMs: ${options.timeoutMs}`);
    if (options.permission) lines.push(`    permission: ${options.permission}`);
  }
  return `${lines.join('\n')}\n`;
}

async function until<T>(what: string, probe: () => T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'qunli-mcp-'));
  configFile = join(dir, 'mcp.yaml');
  writeFileSync(configFile, serversYaml({ weather: { timeoutMs: 1500 } }));
  h = await CognitionHarness.start({ QUNLI_MCP_SERVERS: configFile }, 'mcp');
  await until('the MCP tools', () => h.tools.get('mcp_weather_weather_lookup'));
}, 60_000);

afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  h.double.clearScript();
  h.double.requests.length = 0;
});

describe('MCP servers as tool sources', () => {
  it('registers the server’s tools as deferred tools with the configured timeout', () => {
    const tool = h.tools.get('mcp_weather_weather_lookup')!;
    expect(tool).toMatchObject({
      visibility: 'deferred',
      permission: 'member',
      timeoutMs: 1500,
      source: 'mcp:weather',
    });
    expect(h.tools.get('mcp_weather_hang')).toBeDefined();
  });

  it('is found by tool_search, rejects bad arguments, then is called and its result observed', async () => {
    const trigger = await h.message('小满 杭州天气咋样', { direct: true });
    h.double.push(
      call('tool_search', { query: '天气' }),
      call('mcp_weather_weather_lookup', { city: 42 }),
      call('mcp_weather_weather_lookup', { city: '杭州' }),
      call('reply', { msg_id: trigger.payload.messageId }),
      forReplyer({ kind: 'content', content: '晴天，25 度' }),
    );
    const job = h.startJob(trigger);
    const result = await h.run(job, 60_000);
    expect(result).toMatchObject({ outcome: 'replied' });
    expect(offeredTools(planner()[0]!.body)).not.toContain('mcp_weather_weather_lookup');
    expect(offeredTools(planner()[1]!.body)).toContain('mcp_weather_weather_lookup');
    expect(promptText(planner()[2]!.body)).toContain('mcp_weather_weather_lookup 的参数不对');
    expect(promptText(planner()[3]!.body)).toContain('杭州：晴，25°C，东风二级');
    // The server was asked once, with the valid arguments only.
    const asked = readFileSync(join(dir, 'weather.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    expect(asked).toEqual([{ tool: 'weather_lookup', args: { city: '杭州' } }]);
  });

  it('times out cleanly when the server hangs, and the episode goes on', async () => {
    const trigger = await h.message('小满 试试那个工具', { direct: true });
    h.double.push(call('tool_search', { query: '永远不返回' }), call('mcp_weather_hang', {}), call('no_action', {}));
    const job = h.startJob(trigger);
    const result = await h.run(job, 60_000);
    expect(result).toMatchObject({ outcome: 'no_reply' });
    const steps = await h.payloads<EpisodeStepPayload>(job.episodeId, EventKind.EpisodeStep);
    expect(steps[1]!.observation).toMatchObject({ ok: false, errorCode: 'TOOL.TIMEOUT' });
    expect(promptText(planner()[2]!.body)).toContain('超时了');
  });

  it('speaks streamable HTTP too', async () => {
    const server: ChildProcess = spawn(process.execPath, [MCP_TEST_SERVER, '--http', '0'], {
      env: { ...process.env, MCP_TEST_LOG_FILE: join(dir, 'web.log') },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [first] = (await once(server.stdout!, 'data')) as [Buffer];
      const port = /listening (\d+)/.exec(first.toString('utf8'))![1]!;
      writeFileSync(
        configFile,
        `${serversYaml({ weather: { timeoutMs: 1500 } })}  web:\n    transport: http\n    url: http://127.0.0.1:${port}/mcp\n`,
      );
      h.app.get(McpToolSources).reload(configFile);
      await until('the HTTP server’s tools', () => h.tools.get('mcp_web_weather_lookup'));
      const trigger = await h.message('小满 北京天气', { direct: true });
      h.double.push(
        call('tool_search', { query: '天气' }),
        call('mcp_web_weather_lookup', { city: '北京' }),
        call('no_action', {}),
      );
      expect(await h.run(h.startJob(trigger), 60_000)).toMatchObject({ outcome: 'no_reply' });
      expect(promptText(planner()[2]!.body)).toContain('北京：晴，25°C');
      // The stdio server's entry did not change, so it was not restarted.
      expect(h.app.get(McpToolSources).connection('weather')).toBeDefined();
    } finally {
      server.kill('SIGKILL');
    }
  });

  it('takes the tools away when the server goes away, and a removed server for good', async () => {
    writeFileSync(join(dir, 'weather.gone'), '');
    const pid = Number(readFileSync(join(dir, 'weather.pid'), 'utf8'));
    process.kill(pid, 'SIGKILL');
    await until(
      'the tools to go',
      () => !h.tools.get('mcp_weather_weather_lookup') && h.tools.all().every((t) => t.source !== 'mcp:weather'),
    );
    // It comes back when the server can start again (reconnect with backoff).
    rmSync(join(dir, 'weather.gone'));
    await until('the tools to come back', () => h.tools.get('mcp_weather_weather_lookup'), 40_000);
    // Removed from the configuration: closed, its tools unregistered, no reconnect.
    writeFileSync(configFile, 'servers: {}\n');
    h.app.get(McpToolSources).reload(configFile);
    await until('the removal', () => h.tools.all().every((t) => !t.source.startsWith('mcp:')));
    expect(h.app.get(McpToolSources).connection('weather')).toBeUndefined();
    expect(existsSync(configFile)).toBe(true);
  }, 60_000);
});
