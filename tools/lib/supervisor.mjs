/**
 * Several long-running processes under one supervisor, built on concurrently's Node API: output prefixed with
 * each process's name in its own colour, a crashed process restarted a few times after a pause, and Ctrl-C
 * (or SIGTERM/SIGHUP) stopping all of them; a second Ctrl-C kills whatever is still running.
 */
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import process from 'node:process';

const COLORS = ['cyan', 'green', 'yellow', 'magenta', 'blue', 'white', 'gray'];
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Each process gets its own process group, so Ctrl-C in the terminal reaches only the supervisor, which then
 * sends exactly one SIGINT per process. Two SIGINTs (terminal + supervisor) would cut a Nest app's graceful
 * shutdown short: its handler is removed after the first.
 */
function spawnInOwnGroup(command, options) {
  return spawn('/bin/sh', ['-c', command], { ...options, detached: true });
}

/**
 * @param processes {{ name: string, command: string, env?: Record<string, string>, cwd?: string }[]}
 * @returns {Promise<{ commands: import('concurrently').Command[], finished: Promise<number>, stop: () => void }>}
 *   `finished` resolves with 0 after a requested stop, 1 when processes ended on their own with a failure.
 */
export async function supervise(processes, { restartTries = 3, restartDelayMs = 2000 } = {}) {
  const { Command, KillOnSignal, LogError, LogExit, LogOutput, Logger, RestartProcess, createConcurrently } =
    await import('concurrently');
  const logger = new Logger({ prefixFormat: 'name' });
  logger.setPrefixLength(Math.max(...processes.map((entry) => entry.name.length)));

  // KillOnSignal counts only SIGINT as a requested stop (no restart, exit code 0), so every stop signal the
  // supervisor receives is handed to it as SIGINT through this emitter rather than the real process object.
  const stopRequests = new EventEmitter();
  const abortController = new globalThis.AbortController();
  const { commands, result } = createConcurrently(
    processes.map((entry, index) => ({ ...entry, prefixColor: COLORS[index % COLORS.length] })),
    {
      logger,
      outputStream: process.stdout,
      abortSignal: abortController.signal,
      ...(process.platform === 'win32' ? {} : { spawn: spawnInOwnGroup }),
      controllers: [
        new LogError({ logger }),
        new LogOutput({ logger }),
        new LogExit({ logger }),
        new KillOnSignal({ process: stopRequests, abortController }),
        new RestartProcess({ logger, delay: restartDelayMs, tries: restartTries }),
      ],
    },
  );

  let stopping = false;
  const stop = () => {
    if (!stopping) {
      stopping = true;
      logger.logGlobalEvent('stopping every process (press Ctrl-C again to kill them at once)');
      stopRequests.emit('SIGINT', 'SIGINT');
      return;
    }
    for (const command of commands) if (Command.canKill(command)) command.kill('SIGKILL');
  };
  for (const signal of STOP_SIGNALS) process.on(signal, stop);
  // A restart already scheduled when the stop came would otherwise bring a process back after everything stopped.
  for (const command of commands) {
    command.stateChange.subscribe((state) => {
      if (state === 'started' && stopping) command.kill('SIGINT');
    });
  }

  const finished = result
    .then(
      () => 0,
      () => (stopping ? 0 : 1),
    )
    .finally(() => {
      for (const signal of STOP_SIGNALS) process.off(signal, stop);
    });
  return { commands, finished, stop };
}
