import {
  EventKind,
  makeEvent,
  PRIORITY,
  type EventKind as Kind,
  type EventOf,
  type LlmCalledPayload,
  type MonitorName,
} from '@app/contracts';
import type { EpisodeState } from './episode-state.js';

const SOURCE = 'cognition';

/** Builds the events of one episode: caused by its trigger, in its conversation, stamped with product time. */
export class EpisodeEvents {
  constructor(
    private readonly state: Pick<EpisodeState, 'trigger' | 'groupId' | 'episodeId'>,
    private readonly now: () => Date,
  ) {}

  event<K extends Kind>(kind: K, payload: EventOf<K>['payload'], priority?: number): EventOf<K> {
    const trigger = this.state.trigger;
    return makeEvent({
      kind,
      groupId: this.state.groupId,
      payload,
      source: SOURCE,
      cause: trigger,
      ...(trigger.threadId !== undefined ? { threadId: trigger.threadId } : {}),
      actorIds: [trigger.payload.sender.userId],
      evidenceMessageIds: [trigger.id],
      priority: priority ?? trigger.priority,
      createdAt: this.now(),
    });
  }

  monitor(name: MonitorName, data: Record<string, unknown>): EventOf<'monitor.recorded'> {
    return this.event(EventKind.MonitorRecorded, { name, episodeId: this.state.episodeId, data }, PRIORITY.background);
  }

  llmCalled(payload: Omit<LlmCalledPayload, 'episodeId'>): EventOf<'llm.called'> {
    return this.event(EventKind.LlmCalled, { ...payload, episodeId: this.state.episodeId }, PRIORITY.background);
  }
}
