/** Running commands from the developer tools, with the person seeing their output. */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import process from 'node:process';
import { UserFacingError } from './console.mjs';

const isWindows = process.platform === 'win32';

/**
 * Run a command to completion with the terminal attached. Resolves with its exit code, or rejects with a
 * UserFacingError naming the command when it fails and `check` is set (the default).
 */
export function run(command, args, { cwd, env, check = true, quiet = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: env ?? process.env,
      stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      // npm is a .cmd script on Windows, which only a shell can start.
      shell: isWindows,
    });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += String(chunk)));
    child.stderr?.on('data', (chunk) => (output += String(chunk)));
    child.on('error', (error) => reject(new UserFacingError(`could not start ${command}: ${error.message}`)));
    child.on('close', (code, signal) => {
      const exitCode = code ?? 1;
      if (check && exitCode !== 0) {
        const how = signal ? `was killed by ${signal}` : `exited with code ${exitCode}`;
        const shown = [command, ...args].join(' ');
        reject(new UserFacingError(`\`${shown}\` ${how}${quiet && output ? `:\n${output.trim()}` : ''}`, exitCode));
        return;
      }
      resolve(exitCode);
    });
  });
}

/** The absolute path of an executable on PATH, or undefined when it is not installed. */
export function findExecutable(name, extraDirs = []) {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), ...extraDirs].filter((dir) => dir !== '');
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this directory; the next one may have it.
      continue;
    }
  }
  return undefined;
}
