/** One chat message from the read models, with what became of it. */
export interface HandledMessage {
  groupId: string | null;
  /** `messages.direct`: addressed to the bot (@, reply to it, its name, private chat, poke). */
  direct: boolean;
  /** It went to an episode (deliberated), alone or merged with others. */
  deliberated: boolean;
  /** A part of a reply to it (or to the episode it was merged into) was sent. */
  answered: boolean;
}

export interface EpisodeCost {
  /** The episode's trigger was a direct message. */
  direct: boolean;
  /** Model steps the episode recorded. */
  steps: number;
  /** LLM calls recorded for the episode (`llm_calls.episode_id`: planner and replyer both); else one per step. */
  llmCalls?: number;
}

export interface EconomyEvidence {
  messages: HandledMessage[];
  episodes: EpisodeCost[];
  /** Completions the LLM double answered (every role: planner, replyer, utils). */
  llmCalls: number;
  /** Prompt + completion tokens the double billed. */
  llmTokens: number;
  /** Deliveries by target (`group:<id>` / `private:<id>`), from the OneBot double's record. */
  deliveriesByTarget: Record<string, number>;
}

export interface EconomyFigures {
  ambient: number;
  direct: number;
  /** LLM calls beyond those the direct messages needed, per 100 ambient messages. */
  llmCallsPer100Ambient: number;
  /** LLM tokens per message that went to an episode. */
  tokensPerHandled: number;
  /** Share of direct messages that got an answer (0–1). */
  directAnswered: number;
  /** Share of ambient messages that got an answer (0–1). */
  ambientAnswered: number;
  llmCalls: number;
  llmCallsDirect: number;
  /** Calls recorded for episodes whose trigger was ambient (what attention chose to think about). */
  llmCallsAmbientEpisodes: number;
  /** Calls no episode accounts for (memory and life-line utils work, timing gates, polishing). */
  llmCallsOutsideEpisodes: number;
  llmTokens: number;
  handled: number;
  episodes: number;
  sendsPerGroup: Record<string, number>;
}

const ratio = (part: number, whole: number, digits = 3) =>
  whole === 0 ? 0 : Math.round((part / whole) * 10 ** digits) / 10 ** digits;

/**
 * The economy figures. LLM calls are attributed to direct messages by the calls their episodes recorded (or one per
 * step where none were recorded); every other call — ambient episodes, and calls outside any episode (memory and
 * life-line utils work, a timing gate, polishing) — counts against ambient. Conservative on purpose: overhead can
 * only make `llmCallsPer100Ambient` worse, never hide; the two parts are reported beside it.
 */
export function economyFigures(evidence: EconomyEvidence): EconomyFigures {
  const direct = evidence.messages.filter((m) => m.direct);
  const ambient = evidence.messages.filter((m) => !m.direct);
  const callsOf = (e: EpisodeCost) => e.llmCalls ?? e.steps;
  const directCalls = evidence.episodes.filter((e) => e.direct).reduce((sum, e) => sum + callsOf(e), 0);
  const llmCallsDirect = Math.min(evidence.llmCalls, directCalls);
  const ambientEpisodeCalls = evidence.episodes.filter((e) => !e.direct).reduce((sum, e) => sum + callsOf(e), 0);
  const llmCallsAmbientEpisodes = Math.min(evidence.llmCalls - llmCallsDirect, ambientEpisodeCalls);
  const handled = evidence.messages.filter((m) => m.deliberated).length;
  const sendsPerGroup = Object.fromEntries(
    Object.entries(evidence.deliveriesByTarget)
      .filter(([target]) => target.startsWith('group:'))
      .map(([target, n]) => [target.slice('group:'.length), n]),
  );
  return {
    ambient: ambient.length,
    direct: direct.length,
    llmCallsPer100Ambient:
      ambient.length === 0 ? 0 : Math.round(((evidence.llmCalls - llmCallsDirect) / ambient.length) * 10000) / 100,
    tokensPerHandled: handled === 0 ? 0 : Math.round(evidence.llmTokens / handled),
    directAnswered: ratio(direct.filter((m) => m.answered).length, direct.length),
    ambientAnswered: ratio(ambient.filter((m) => m.answered).length, ambient.length),
    llmCalls: evidence.llmCalls,
    llmCallsDirect,
    llmCallsAmbientEpisodes,
    llmCallsOutsideEpisodes: evidence.llmCalls - llmCallsDirect - llmCallsAmbientEpisodes,
    llmTokens: evidence.llmTokens,
    handled,
    episodes: evidence.episodes.length,
    sendsPerGroup,
  };
}
