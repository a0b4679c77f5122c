import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** V8's collector, exposed at run time for specs about what stays reachable (no `--expose-gc` needed). */
export function exposedGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** The heap in use right after a full collection. */
export function heapAfterGc(): number {
  exposedGc()();
  return process.memoryUsage().heapUsed;
}
