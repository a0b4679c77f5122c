import { Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { Metrics, QunliConfig } from '@app/platform';
import type { FromProjector, ToProjector } from './projector-thread.protocol.js';

/** How long a scrape waits for the projector thread's metrics before it leaves them out. */
const SCRAPE_TIMEOUT_MS = 2000;

/**
 * Runs the projector (and the stream trimmer) in a worker thread of the scheduler process (ADR-0025): the same
 * consumer group, checkpoints and lease as when it runs inline, on the machine's other core. Its metrics are part of
 * the scheduler's `/metrics`. The thread starts after the scheduler's own consumers and stops before they do; if
 * it fails or ends on its own, the process exits non-zero, so a supervisor restarts the scheduler with it (a
 * process without its projector would let the log grow unarchived).
 */
@Injectable()
export class ProjectorThread implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('ProjectorThread');
  private worker: Worker | undefined;
  private stopping = false;
  private nextScrape = 0;
  private readonly scrapes = new Map<number, (text: string) => void>();

  constructor(
    private readonly config: QunliConfig,
    private readonly metrics: Metrics,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const worker = new Worker(new URL('./projector.worker.js', import.meta.url), {
      env: process.env,
      name: 'qunli-projector',
    });
    this.worker = worker;
    await new Promise<void>((resolve, reject) => {
      const early = (code: number) => reject(new Error(`the projector thread exited with ${code} before it was ready`));
      worker.once('exit', early);
      worker.once('error', reject);
      worker.on('message', (message: FromProjector) => {
        if (message.type === 'ready') {
          worker.off('exit', early);
          worker.off('error', reject);
          resolve();
        } else if (message.type === 'failed' && !this.stopping) {
          reject(new Error(`the projector thread failed: ${message.message}`));
        } else if (message.type === 'metrics') {
          this.scrapes.get(message.id)?.(message.text);
          this.scrapes.delete(message.id);
        }
      });
    });
    worker.on('error', (error) => this.fatal(`the projector thread failed: ${error.stack ?? error.message}`));
    worker.on('exit', (code) => {
      if (!this.stopping) this.fatal(`the projector thread ended on its own (exit code ${code})`);
    });
    this.metrics.contribute(() => this.scrape());
    this.log.log('projector running in its own thread');
  }

  async beforeApplicationShutdown(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.stopping = true;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    this.post({ type: 'stop' });
    const timeout = setTimeout(() => void worker.terminate(), this.config.QUNLI_SHUTDOWN_TIMEOUT_MS);
    await exited;
    clearTimeout(timeout);
    this.worker = undefined;
  }

  private scrape(): Promise<string> {
    const id = this.nextScrape++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.scrapes.delete(id);
        resolve('# projector thread metrics timed out');
      }, SCRAPE_TIMEOUT_MS);
      this.scrapes.set(id, (text) => {
        clearTimeout(timer);
        resolve(text);
      });
      this.post({ type: 'metrics', id });
    });
  }

  private post(message: ToProjector): void {
    this.worker?.postMessage(message);
  }

  private fatal(message: string): void {
    this.log.error(message);
    process.exit(1);
  }
}
