import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './processes.js';

const BUILT = join(REPO_ROOT, 'dist/libs/testing/src/processes.js');

/** Running, not gone and not a zombie (a killed orphan may wait for an init that reaps slowly, or never). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Run a parent that starts a long-running child with `reapOnExit`, prints its pid, then ends as `how` says. */
async function childOfParentThat(how: 'crashes' | 'exits'): Promise<number> {
  const script = `
    import { spawn } from 'node:child_process';
    import { reapOnExit } from ${JSON.stringify(BUILT)};
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    reapOnExit(child);
    console.log(child.pid);
    setTimeout(() => { ${how === 'crashes' ? "throw new Error('bench bug')" : 'process.exit(0)'}; }, 200);
  `;
  const parent = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  parent.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => parent.once('exit', resolve));
  return Number(out.trim());
}

(existsSync(BUILT) ? describe : describe.skip)('reapOnExit (needs `npm run build`)', () => {
  it.each(['crashes', 'exits'] as const)('kills the apps a process started when that process %s', async (how) => {
    const pid = await childOfParentThat(how);
    expect(pid).toBeGreaterThan(0);
    for (let i = 0; i < 50 && alive(pid); i++) await sleep(20);
    expect(alive(pid)).toBe(false);
  });
});
