import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { StreamContext } from '@app/event-bus';
import { REDIS } from '@app/platform';
import type { GroupState } from '../decisions/group-state.js';

/**
 * What cognition's act commit tells the scheduler ahead of the log. An episode's first send sets its acted marker
 * (`Keyspace.episodeActed`) in the same commit as the `action.send`; the scheduler reads the markers of the
 * group's unanswered episodes before it decides, so a message that arrived just before that send — and is
 * decided before the `action.send` reaches the lane — does not supersede an episode that has already answered
 * (the new episode would inherit the answered messages and answer them again).
 */
@Injectable()
export class EpisodeActedStore {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  async learn(ctx: StreamContext, state: GroupState): Promise<GroupState> {
    const open = Object.values(state.episodes).filter((e) => !e.acted && e.status !== 'replied');
    if (open.length === 0) return state;
    const marks = await this.redis.mget(...open.map((e) => ctx.keys.episodeActed(ctx.partition, e.id)));
    const acted = open.filter((_, i) => marks[i] !== null);
    if (acted.length === 0) return state;
    const episodes = { ...state.episodes };
    for (const e of acted) episodes[e.id] = { ...e, acted: true };
    return { ...state, episodes };
  }
}
