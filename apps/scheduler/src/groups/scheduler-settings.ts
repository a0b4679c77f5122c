import type { QunliConfig } from '@app/platform';
import type { SchedulerSettings } from '../decisions/group-state.js';
import { DEFAULT_THREAD_SETTINGS } from '../threads/thread-linking.js';

/** How often a batch may be snoozed before it is skipped. */
export const MAX_SNOOZES = 3;

export function schedulerSettings(config: QunliConfig): SchedulerSettings {
  return {
    debounceQuietMs: config.QUNLI_DEBOUNCE_QUIET_MS,
    debounceMaxMs: config.QUNLI_DEBOUNCE_MAX_MS,
    debounceDirectMs: config.QUNLI_DEBOUNCE_DIRECT_MS,
    ambientLateMs: config.QUNLI_AMBIENT_LATE_MS,
    eventDeadlineMs: config.QUNLI_EVENT_DEADLINE_MS,
    episodeTimeoutMs: config.QUNLI_EPISODE_TIMEOUT_MS,
    maxInterrupts: config.QUNLI_EPISODE_MAX_INTERRUPTS,
    episodeRetries: config.QUNLI_EPISODE_RETRIES,
    retryDelayMs: config.QUNLI_EPISODE_RETRY_MS,
    maxSnoozes: MAX_SNOOZES,
    threads: DEFAULT_THREAD_SETTINGS,
  };
}
