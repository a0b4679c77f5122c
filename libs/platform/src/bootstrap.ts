import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { createServer } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { QunliError } from '@app/contracts';
import { ConfigError, loadConfig, type AppName, type QunliConfig } from './config.js';
import { createLogger } from './logger.js';
import { ShutdownState } from './shutdown-state.js';

export interface BootstrapOptions {
  /** Called after the app is created and before it listens (connect microservices, WS adapters…). */
  configure?: (app: INestApplication, config: QunliConfig) => Promise<void> | void;
}

/**
 * Start one qunli app: validate the configuration first (a bad setting stops the process with one message naming
 * every bad key and exit code 78), then create the Nest app with JSON logs, and listen on its port.
 */
export async function bootstrap(
  app: AppName,
  moduleFactory: (config: QunliConfig) => unknown,
  options: BootstrapOptions = {},
): Promise<INestApplication> {
  let config: QunliConfig;
  try {
    config = loadConfig(app);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(
        `${JSON.stringify({ level: 'fatal', context: app, message: error.message, problems: error.problems })}\n`,
      );
      process.exit(78);
    }
    throw error;
  }
  const logger = createLogger(app, config.QUNLI_LOG_LEVEL);
  let nest: INestApplication;
  try {
    nest = await NestFactory.create(moduleFactory(config) as never, {
      logger,
      bufferLogs: false,
      rawBody: true,
      abortOnError: false,
    });
  } catch (error) {
    // A setting that validated but points at something unusable (a broken persona file, a schema behind its
    // migrations): one line naming the problem, no stack trace, and the configuration exit code.
    if (error instanceof QunliError) {
      process.stderr.write(`${JSON.stringify({ level: 'fatal', context: app, ...error.toJSON() })}\n`);
      process.exit(78);
    }
    throw error;
  }
  stopOnSignals(nest, config, logger);
  await options.configure?.(nest, config);
  await nest.startAllMicroservices();
  // A second cognition process on the same host takes the next free port unless COGNITION_PORT was given.
  const fallback = app === 'cognition' && process.env.COGNITION_PORT === undefined ? 20 : 0;
  await listen(nest, config.portOf(app), config.QUNLI_HTTP_HOST, fallback);
  logger.log(`${app} listening on ${await nest.getUrl()}`);
  return nest;
}

type AppLogger = ReturnType<typeof createLogger>;

/**
 * SIGTERM (an orchestrator's stop) and SIGINT (Ctrl-C) stop the app gracefully: `/health` turns 503 at once, then
 * Nest's shutdown runs every hook (workers stop taking jobs and finish the ones they hold, stream readers stop
 * reading and leave unacknowledged entries pending for the next owner, leases are released, the HTTP server and
 * the Redis and Postgres connections close) and the process exits 0. A shutdown still running after
 * `QUNLI_SHUTDOWN_TIMEOUT_MS` exits 1; whatever it held is recovered by the next owner as after a crash. A second
 * signal while stopping exits at once (Ctrl-C twice).
 */
function stopOnSignals(nest: INestApplication, config: QunliConfig, logger: AppLogger): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn(`${signal} received again while stopping: exiting now`);
      process.exit(1);
    }
    stopping = true;
    const startedAt = Date.now();
    logger.log(`${signal} received: stopping intake and finishing the work in flight`);
    nest.get(ShutdownState).begin();
    setTimeout(() => {
      logger.error(`shutdown still running after ${config.QUNLI_SHUTDOWN_TIMEOUT_MS} ms: exiting`);
      process.exit(1);
    }, config.QUNLI_SHUTDOWN_TIMEOUT_MS).unref();
    nest.close().then(
      () => {
        logger.log(`stopped cleanly in ${Date.now() - startedAt} ms`);
        process.exit(0);
      },
      (error: unknown) => {
        logger.error(`shutdown failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** Whether nothing listens on `port` right now (a probe; the real listen may still race another process). */
function portIsFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
      .once('error', () => resolve(false))
      .listen(port, host, () => probe.close(() => resolve(true)));
  });
}

async function listen(nest: INestApplication, port: number, host: string, fallbacks: number): Promise<void> {
  let offset = 0;
  while (offset < fallbacks && !(await portIsFree(port + offset, host))) offset++;
  for (; ; offset++) {
    try {
      await nest.listen(port + offset, host);
      return;
    } catch (error) {
      const inUse = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
      if (!inUse || offset >= fallbacks) throw error;
    }
  }
}
