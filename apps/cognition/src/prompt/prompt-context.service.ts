import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import {
  PROMPT_CONTEXT_PROVIDERS,
  type PromptContextProvider,
  type PromptContextRequest,
  type PromptSection,
} from '@app/contracts';
import { Metrics, SHORT_SECONDS_BUCKETS } from '@app/platform';
import type { ProvidedSections } from './replyer.prompt.js';

/** How long an episode waits for the prompt sections of other modules before going on without them. */
export const PROMPT_CONTEXT_TIMEOUT_MS = 3000;

/** How a provider's turn ended, as `qunli_prompt_section_seconds` labels it. */
type SectionOutcome = 'ok' | 'failed' | 'timeout';

class SectionTimeout extends Error {
  constructor() {
    super('timed out');
  }
}

/**
 * Collects the prompt sections other modules provide (life line, memory, sender profile…) through
 * `PROMPT_CONTEXT_PROVIDERS`, or registered at run time. A provider that fails or is slow is skipped (counted),
 * never fails the episode. Each provider's time is observed (`qunli_prompt_section_seconds`): an episode's first model
 * call waits for the slowest of them, and memory recall is the one that slows as a group's history grows.
 */
@Injectable()
export class PromptContextService {
  private readonly logger = new Logger(PromptContextService.name);
  private readonly providers: PromptContextProvider[] = [];
  private readonly failures;
  private readonly durations;
  /** How long a provider may take (`PROMPT_CONTEXT_TIMEOUT_MS`; shorter in tests). */
  timeoutMs = PROMPT_CONTEXT_TIMEOUT_MS;

  constructor(
    metrics: Metrics,
    @Optional() @Inject(PROMPT_CONTEXT_PROVIDERS) given?: PromptContextProvider[] | PromptContextProvider[][],
  ) {
    this.failures = metrics.counter({
      name: 'qunli_prompt_context_failures_total',
      help: 'Prompt section providers that failed or timed out (the section was left out), by section',
      labelNames: ['section'],
    });
    this.durations = metrics.histogram({
      name: 'qunli_prompt_section_seconds',
      help: 'How long one prompt section provider took for an episode (memory recall, the sender, the life line, jargon), by section and outcome (ok, failed, timeout)',
      labelNames: ['section', 'outcome'],
      buckets: SHORT_SECONDS_BUCKETS,
    });
    for (const provider of (given ?? []).flat()) this.register(provider);
  }

  register(provider: PromptContextProvider): () => void {
    this.providers.push(provider);
    return () => {
      const index = this.providers.indexOf(provider);
      if (index >= 0) this.providers.splice(index, 1);
    };
  }

  async collect(request: PromptContextRequest): Promise<ProvidedSections> {
    const sections: ProvidedSections = {};
    const results = await Promise.all(
      this.providers.map(async (provider) => {
        let timer: NodeJS.Timeout | undefined;
        let outcome: SectionOutcome = 'ok';
        const began = performance.now();
        try {
          const text = await Promise.race([
            provider.provide(request),
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new SectionTimeout()), this.timeoutMs).unref();
            }),
          ]);
          return { section: provider.section, text };
        } catch (error) {
          outcome = error instanceof SectionTimeout ? 'timeout' : 'failed';
          this.failures.inc({ section: provider.section });
          this.logger.warn(`prompt section ${provider.section} skipped: ${(error as Error).message}`);
          return { section: provider.section, text: null };
        } finally {
          // Every episode asks every provider: a timer left running would hold the request until it fired.
          clearTimeout(timer);
          this.durations.observe({ section: provider.section, outcome }, (performance.now() - began) / 1000);
        }
      }),
    );
    for (const { section, text } of results) {
      if (!text) continue;
      const key: PromptSection = section;
      sections[key] = sections[key] ? `${sections[key]}\n${text}` : text;
    }
    return sections;
  }
}
