import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { signBody } from '@app/onebot';
import { FakeOneBot, malformedPayloads } from '@app/testing';
import { BENCH_SECRET, BENCH_SELF_ID, BENCH_TOKEN, BenchStack } from '../bench/stack.js';

const USAGE = `usage: npm run fuzz -- [--payloads 10000] [--seed 7] [--json]

Starts ingress as a process on a throwaway database and key prefix, sends --payloads generated malformed OneBot
inputs (valid messages interleaved) over HTTP POST and again over a reverse WebSocket, and reports. The last line of
output is one JSON object: payloads, accepted, rejected, crashes, rssBeforeMb, rssAfterMb.`;

async function rssMb(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('process_resident_memory_bytes'));
  return line === undefined ? 0 : Math.round((Number(line.slice(line.lastIndexOf(' ') + 1)) / 1024 / 1024) * 10) / 10;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      payloads: { type: 'string', default: '10000' },
      seed: { type: 'string', default: '7' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const count = Number(values.payloads);
  const seed = Number(values.seed);
  const stack = new BenchStack(['ingress'], { QUNLI_LOG_LEVEL: 'fatal' });
  await stack.start();
  const url = stack.url('ingress');
  const result = {
    payloads: 0,
    accepted: 0,
    rejected: 0,
    crashes: 0,
    rssBeforeMb: 0,
    rssAfterMb: 0,
    transports: ['http', 'ws_reverse'],
  };
  const fake = new FakeOneBot({ selfId: BENCH_SELF_ID, accessToken: BENCH_TOKEN });
  try {
    result.rssBeforeMb = await rssMb(url);
    const cases = [...malformedPayloads(seed, count)];
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < cases.length; i = next++) {
        const raw = cases[i]!.raw;
        try {
          const response = await fetch(`${url}/onebot/v11/http`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${BENCH_TOKEN}`,
              'x-signature': signBody(BENCH_SECRET, raw),
            },
            body: raw,
          });
          await response.arrayBuffer();
          if (response.status >= 500) result.crashes++;
          else if (response.status >= 400) result.rejected++;
          else result.accepted++;
        } catch {
          result.crashes++;
        }
        result.payloads++;
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));

    await fake.start();
    const connection = await fake.connectReverse(`${url.replace(/^http/, 'ws')}/onebot/v11/ws`);
    const wsCases = [...malformedPayloads(seed + 1, count)];
    for (const { raw } of wsCases) connection.socket.send(raw);
    const before = Date.now();
    let answered = 0;
    const refusedFrames = () =>
      fake.otherFrames.filter((f) => typeof f === 'object' && f !== null && 'error' in f).length;
    // Wait until the error frames stop coming (one per refused frame), then count.
    for (let last = -1; Date.now() - before < 120_000;) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      answered = refusedFrames();
      if (answered === last) break;
      last = answered;
    }
    result.payloads += wsCases.length;
    result.rejected += answered;
    result.accepted += wsCases.length - answered;
    if (connection.socket.readyState !== connection.socket.OPEN) result.crashes++;
    await connection.close();
    const health = await fetch(`${url}/health`).catch(() => undefined);
    if (!health || health.status !== 200) result.crashes++;
    result.rssAfterMb = await rssMb(url);
  } finally {
    await fake.stop();
    await stack.stop();
  }
  if (!values.json) {
    process.stdout.write(
      `fuzz: ${result.payloads} payloads (${count} over HTTP POST, ${count} over a reverse WebSocket): ` +
        `${result.accepted} taken, ${result.rejected} refused, ${result.crashes} crashes; ` +
        `ingress RSS ${result.rssBeforeMb} MB → ${result.rssAfterMb} MB\n`,
    );
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
  if (result.crashes > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
