import 'reflect-metadata';
import { parentPort } from 'node:worker_threads';
import { NestFactory } from '@nestjs/core';
import { createLogger, loadConfig, Metrics } from '@app/platform';
import { ProjectorHostModule } from './projector-host.module.js';
import type { FromProjector, ToProjector } from './projector-thread.protocol.js';

/**
 * The projector thread's entry (ADR-0025): a Nest application context with the projector module, answering the
 * main thread's metric scrapes and stopping when told to. Any failure is reported and ends the thread; the main
 * thread then ends the process, so the orchestrator restarts both together.
 */
const port = parentPort;
if (!port) throw new Error('projector.worker must run as a worker thread');
const send = (message: FromProjector) => port.postMessage(message);

try {
  const config = loadConfig('scheduler');
  const app = await NestFactory.createApplicationContext(ProjectorHostModule, {
    logger: createLogger('scheduler', config.QUNLI_LOG_LEVEL),
    abortOnError: false,
  });
  const metrics = app.get(Metrics);
  port.on('message', (message: ToProjector) => {
    if (message.type === 'metrics') {
      metrics.scrape().then(
        (text) => send({ type: 'metrics', id: message.id, text }),
        (error: unknown) =>
          send({ type: 'metrics', id: message.id, text: `# projector scrape failed: ${String(error)}` }),
      );
    } else if (message.type === 'stop') {
      app.close().then(
        () => {
          send({ type: 'stopped' });
          port.close();
        },
        (error: unknown) => {
          send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
          port.close();
        },
      );
    }
  });
  send({ type: 'ready' });
} catch (error) {
  send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  port.close();
}
