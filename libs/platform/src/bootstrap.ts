import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { createServer } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { QunliError } from '@app/contracts';
import { ConfigError, loadConfig, type AppName, type QunliConfig } from './config.js';
import { createLogger } from './logger.js';

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
  nest.enableShutdownHooks();
  await options.configure?.(nest, config);
  await nest.startAllMicroservices();
  // A second cognition process on the same host takes the next free port unless COGNITION_PORT was given.
  const fallback = app === 'cognition' && process.env.COGNITION_PORT === undefined ? 20 : 0;
  await listen(nest, config.portOf(app), config.QUNLI_HTTP_HOST, fallback);
  logger.log(`${app} listening on ${await nest.getUrl()}`);
  return nest;
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
