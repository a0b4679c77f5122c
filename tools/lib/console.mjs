/**
 * Messages of the developer tools (`npm run up`, `tools/run.mjs`): short, coloured when stdout is a terminal,
 * and always prefixed so they stand out from the apps' JSON logs.
 */
import process from 'node:process';

const useColor = process.stdout.isTTY === true && process.env.NO_COLOR === undefined;

function paint(code, text) {
  return useColor ? `\u001b[${code}m${text}\u001b[0m` : text;
}

export const bold = (text) => paint('1', text);
export const dim = (text) => paint('2', text);
export const cyan = (text) => paint('36', text);
export const green = (text) => paint('32', text);
export const yellow = (text) => paint('33', text);
export const red = (text) => paint('31', text);

const TAG = 'qunli';

/** A step that is starting ("checking Redis at …"). */
export function step(message) {
  process.stdout.write(`${cyan(`[${TAG}]`)} ${message}\n`);
}

/**
 * A step of a runner whose stdout belongs to the tool it starts (`tools/run.mjs`): written to stderr, so that
 * `npm run bench -- … --json > out.json` holds the tool's JSON alone.
 */
export function stepAside(message) {
  process.stderr.write(`${cyan(`[${TAG}]`)} ${message}\n`);
}

export function ok(message) {
  process.stdout.write(`${green(`[${TAG}]`)} ${message}\n`);
}

export function warn(message) {
  process.stdout.write(`${yellow(`[${TAG}]`)} ${message}\n`);
}

export function fail(message) {
  process.stderr.write(`${red(`[${TAG}]`)} ${message}\n`);
}

/** A stop with a reason the person can act on; the caller's stack trace would only hide it. */
export class UserFacingError extends Error {
  constructor(message, exitCode = 1) {
    super(message);
    this.name = 'UserFacingError';
    this.exitCode = exitCode;
  }
}

/** Run a tool's main function: user-facing errors print their message alone, anything else its stack. */
export async function runMain(main) {
  try {
    await main();
  } catch (error) {
    if (error instanceof UserFacingError) {
      fail(error.message);
      process.exit(error.exitCode);
    }
    fail(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  }
}
