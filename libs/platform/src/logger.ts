import { ConsoleLogger, type LogLevel } from '@nestjs/common';
import type { LogLevelName } from './config.js';

const ORDER: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/** JSON lines on stdout, one object per record, tagged with the app name. */
export function createLogger(app: string, level: LogLevelName = 'log'): ConsoleLogger {
  return new ConsoleLogger(app, {
    json: true,
    logLevels: ORDER.slice(0, ORDER.indexOf(level) + 1),
  });
}
