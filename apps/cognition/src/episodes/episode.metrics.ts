import { LONG_SECONDS_BUCKETS, type Metrics } from '@app/platform';

/** Label values known in advance are exported at 0 from the start, so dashboards show a series before the first. */
export const WAIT_CAUSES = ['wait', 'tool'] as const;
export const INTERRUPT_EFFECTS = ['aborted_planner', 'merged_after'] as const;

/** Every metric of the slow plane, created once per registry (Metrics shares them by name). */
export function episodeMetrics(metrics: Metrics) {
  const created = {
    episodes: metrics.counter({
      name: 'qunli_episodes_total',
      help: 'Episodes finished, by outcome (replied, no_reply, failed, cancelled, superseded) and what ended them',
      labelNames: ['outcome', 'ended_by'],
    }),
    waits: metrics.counter({
      name: 'qunli_episode_waits_total',
      help: 'Episodes parked until a timer (wait) or an asynchronous tool result, by cause',
      labelNames: ['cause'],
    }),
    redeliveries: metrics.counter({
      name: 'qunli_episode_redeliveries_total',
      help: 'Episode jobs that found their work already recorded, or another worker ahead of them (nothing was done)',
      labelNames: ['reason'],
    }),
    inheritedAnswered: metrics.counter({
      name: 'qunli_episode_inherited_answered_total',
      help: 'Fragments an episode took over from a superseded one and left out, because that one had answered them',
    }),
    handedBack: metrics.counter({
      name: 'qunli_episode_handed_back_total',
      help: 'Running episodes handed back to the queue at shutdown (another worker continues them)',
    }),
    duration: metrics.histogram({
      name: 'qunli_episode_duration_seconds',
      help: 'Wall-clock time of one episode job, from its start to its recorded outcome or park',
      labelNames: ['outcome'],
      buckets: LONG_SECONDS_BUCKETS,
    }),
    steps: metrics.histogram({
      name: 'qunli_episode_steps',
      help: 'Steps one finished episode took',
      buckets: [0, 1, 2, 3, 4, 5, 6, 8, 10],
    }),
    invalidToolCalls: metrics.counter({
      name: 'qunli_episode_invalid_tool_calls_total',
      help: 'Planner answers that could not be used (corrected by an observation), by reason',
      labelNames: ['reason'],
    }),
    interrupts: metrics.counter({
      name: 'qunli_episode_interrupts_total',
      help: 'Interrupts applied to running episodes, by effect (aborted the planner or merged after it)',
      labelNames: ['effect'],
    }),
    reflections: metrics.counter({
      name: 'qunli_episode_reflections_total',
      help: 'Planner thoughts replaced by the reflection prompt for repeating the previous one',
    }),
    toolCalls: metrics.counter({
      name: 'qunli_tool_calls_total',
      help: 'Tool calls by tool and outcome (ok, the error code, denied, needs_confirmation)',
      labelNames: ['tool', 'outcome'],
    }),
    toolDuration: metrics.histogram({
      name: 'qunli_tool_call_duration_seconds',
      help: 'Wall-clock time of one tool call, retries included',
      labelNames: ['tool'],
      buckets: LONG_SECONDS_BUCKETS,
    }),
  };
  for (const cause of WAIT_CAUSES) created.waits.inc({ cause }, 0);
  for (const effect of INTERRUPT_EFFECTS) created.interrupts.inc({ effect }, 0);
  return created;
}

export type EpisodeMetrics = ReturnType<typeof episodeMetrics>;
