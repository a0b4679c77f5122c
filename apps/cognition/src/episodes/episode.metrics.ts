import { LONG_SECONDS_BUCKETS, type Metrics } from '@app/platform';

/** Every metric of the slow plane, created once per registry (Metrics shares them by name). */
export function episodeMetrics(metrics: Metrics) {
  return {
    episodes: metrics.counter({
      name: 'qunli_episodes_total',
      help: 'Episodes finished, by outcome (replied, no_reply, failed)',
      labelNames: ['outcome'],
    }),
    redeliveries: metrics.counter({
      name: 'qunli_episode_redeliveries_total',
      help: 'Episode jobs delivered again after their outcome was already recorded (nothing was done)',
    }),
    duration: metrics.histogram({
      name: 'qunli_episode_duration_seconds',
      help: 'Wall-clock time of one episode, from start to recorded outcome',
      labelNames: ['outcome'],
      buckets: LONG_SECONDS_BUCKETS,
    }),
    steps: metrics.histogram({
      name: 'qunli_episode_steps',
      help: 'LLM steps one episode took',
      buckets: [1, 2, 3, 4, 5, 6, 8, 10],
    }),
    invalidToolCalls: metrics.counter({
      name: 'qunli_episode_invalid_tool_calls_total',
      help: 'Model answers that could not be used (EPISODE.INVALID_TOOL_CALL), by reason',
      labelNames: ['reason'],
    }),
    plainTextReplies: metrics.counter({
      name: 'qunli_episode_plain_text_replies_total',
      help: 'Model answers with plain text instead of a tool call, taken as the reply',
    }),
    llmCalls: metrics.counter({
      name: 'qunli_llm_calls_total',
      help: 'LLM calls, by role, model and outcome (ok or the error code)',
      labelNames: ['role', 'model', 'outcome'],
    }),
    llmTokens: metrics.counter({
      name: 'qunli_llm_tokens_total',
      help: 'LLM tokens, by role, model and direction (in = prompt, out = completion)',
      labelNames: ['role', 'model', 'direction'],
    }),
    llmDuration: metrics.histogram({
      name: 'qunli_llm_call_duration_seconds',
      help: 'Wall-clock time of one LLM call, retries included',
      labelNames: ['role', 'model', 'outcome'],
      buckets: LONG_SECONDS_BUCKETS,
    }),
  };
}

export type EpisodeMetrics = ReturnType<typeof episodeMetrics>;
