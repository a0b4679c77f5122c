import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Keyspace } from '@app/contracts';
import { REDIS } from '@app/platform';
import type { ChatLine, EpisodeState } from '../episodes/episode-state.js';
import { isConfirmation } from './tool-result.rules.js';

/** How long a request for confirmation stays open (real seconds). */
export const CONFIRMATION_TTL_SECONDS = 600;

interface PendingConfirmation {
  requestedAtSec: number;
  episodeId: string;
}

/**
 * Confirmations of dangerous tools (`requiresConfirmation`). The first call only records a request; the call
 * runs when it comes again, for the same sender, tool and arguments, in an episode answering a later message of
 * that sender that says yes ("确认"). The model cannot confirm for anyone: the yes must be a chat message.
 */
@Injectable()
export class ToolConfirmations {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {}

  private key(state: EpisodeState): string {
    const conversation = state.groupId ?? `private:${state.trigger.payload.sender.userId}`;
    return this.keys.toolConfirmations(this.keys.partitionOf(state.groupId), conversation);
  }

  private field(senderId: string, tool: string, args: Record<string, unknown>): string {
    const digest = createHash('sha256')
      .update(JSON.stringify(args, Object.keys(args).sort()))
      .digest('hex')
      .slice(0, 16);
    return `${senderId}:${tool}:${digest}`;
  }

  async request(
    state: EpisodeState,
    senderId: string,
    tool: string,
    args: Record<string, unknown>,
    nowMs: number,
  ): Promise<void> {
    const key = this.key(state);
    const value: PendingConfirmation = { requestedAtSec: Math.floor(nowMs / 1000), episodeId: state.episodeId };
    await this.redis
      .multi()
      .hset(key, this.field(senderId, tool, args), JSON.stringify(value))
      .expire(key, CONFIRMATION_TTL_SECONDS)
      .exec();
  }

  /** True (and the request is used up) when the sender has said yes after the request. */
  async check(state: EpisodeState, senderId: string, tool: string, args: Record<string, unknown>): Promise<boolean> {
    const key = this.key(state);
    const field = this.field(senderId, tool, args);
    const json = await this.redis.hget(key, field);
    if (json === null) return false;
    const pending = JSON.parse(json) as PendingConfirmation;
    if (pending.episodeId === state.episodeId) return false;
    const yes = state.history.some(
      (e): e is ChatLine =>
        e.kind === 'message' &&
        !e.fromSelf &&
        e.userId === senderId &&
        e.sentAt >= pending.requestedAtSec &&
        isConfirmation(e.text),
    );
    if (!yes) return false;
    return (await this.redis.hdel(key, field)) === 1;
  }
}
