import { Injectable, Logger } from '@nestjs/common';
import { HOOK_NAMES, QunliError, type HookName, type HookPayloads, type HookRegistration } from '@app/contracts';
import { Metrics } from '@app/platform';

/**
 * The episode hooks of ADR §15 (Maisaka's hook specs). Handlers run in priority order, each seeing the payload
 * as the previous one left it; a handler's partial result is merged over the payload. A failing handler is
 * logged and counted and changes nothing. `register` returns the function that unregisters.
 */
@Injectable()
export class HookRegistry {
  private readonly logger = new Logger(HookRegistry.name);
  private readonly hooks = new Map<HookName, HookRegistration[]>();
  private readonly failures;
  private readonly runs;

  constructor(metrics: Metrics) {
    this.failures = metrics.counter({
      name: 'qunli_hook_failures_total',
      help: 'Hook handlers that threw (their rewrite was skipped), by hook',
      labelNames: ['hook'],
    });
    this.runs = metrics.counter({
      name: 'qunli_hook_runs_total',
      help: 'Hook handler runs, by hook',
      labelNames: ['hook'],
    });
  }

  register<N extends HookName>(registration: HookRegistration<N>): () => void {
    if (!(HOOK_NAMES as readonly string[]).includes(registration.name)) {
      throw new QunliError('HOOK.UNKNOWN', `no hook named ${JSON.stringify(registration.name)}`, {
        name: registration.name,
        known: HOOK_NAMES,
      });
    }
    const list = this.hooks.get(registration.name) ?? [];
    list.push(registration as unknown as HookRegistration);
    list.sort((a, b) => (a.priority ?? 100) - (b.priority ?? 100));
    this.hooks.set(registration.name, list);
    return () => {
      const current = this.hooks.get(registration.name) ?? [];
      this.hooks.set(
        registration.name,
        current.filter((r) => r !== (registration as unknown as HookRegistration)),
      );
    };
  }

  count(name: HookName): number {
    return this.hooks.get(name)?.length ?? 0;
  }

  async run<N extends HookName>(name: N, payload: HookPayloads[N]): Promise<HookPayloads[N]> {
    let current = payload;
    for (const registration of this.hooks.get(name) ?? []) {
      this.runs.inc({ hook: name });
      try {
        const handler = registration.handler as unknown as (p: HookPayloads[N]) => unknown;
        const result = (await handler(current)) as Partial<HookPayloads[N]> | undefined;
        if (result && typeof result === 'object') current = { ...current, ...result };
      } catch (error) {
        this.failures.inc({ hook: name });
        this.logger.warn(`hook ${name} of ${registration.source} failed: ${(error as Error).message}`);
      }
    }
    return current;
  }
}
