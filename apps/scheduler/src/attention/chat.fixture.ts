import { EventKind, type DirectReason, type EventEnvelope } from '@app/contracts';
import type { AttentionPolicy } from '../decisions/attention.policy.js';
import { fact, fired, message, ofType, Scenario, SETTINGS, started, T0 } from '../decisions/decider.fixture.js';
import type { DecisionRecord, TimerSpec } from '../decisions/group-state.js';

/**
 * A scripted group chat through the decider: people say things at product times; durable timers fire when due;
 * every episode the decider offers starts at once and delivers one reply `replyAfterMs` later. What the bot
 * decided about each message, and what it replied to, is kept for assertions.
 */
export class Chat {
  readonly scenario: Scenario;
  private readonly queue: { at: number; seq: number; event: EventEnvelope }[] = [];
  private seq = 0;
  private now = T0;
  /** The last decision about each event. */
  readonly decisions = new Map<string, DecisionRecord>();
  /** Triggers the bot replied to, in order. */
  readonly replies: { triggerEventId: string; at: number; thread: string }[] = [];
  private replyCounter = 0;

  constructor(
    attention: AttentionPolicy,
    readonly groupId: string,
    private readonly replyAfterMs = 3000,
  ) {
    this.scenario = new Scenario(attention, SETTINGS, groupId);
  }

  /** `sender` says `text` `atSec` seconds after T0. */
  say(
    sender: string,
    text: string,
    atSec: number,
    options: { direct?: DirectReason; replyTo?: string } = {},
  ): EventEnvelope {
    const event = message(sender, text, { at: T0 + atSec * 1000, group: this.groupId, ...options });
    this.push(T0 + atSec * 1000, event);
    return event;
  }

  private push(at: number, event: EventEnvelope): void {
    this.queue.push({ at, seq: this.seq++, event });
  }

  private timerSpec(timerId: string): TimerSpec {
    const set = ofType(this.scenario.all, 'timerSet').filter((e) => e.timer.timerId === timerId);
    return set[set.length - 1]!.timer;
  }

  /** Run everything due up to `untilSec` seconds after T0, in time order. */
  runUntil(untilSec: number): this {
    const until = T0 + untilSec * 1000;
    for (;;) {
      this.queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const timers = Object.entries(this.scenario.state.timers).sort((a, b) => a[1].dueAt - b[1].dueAt);
      const nextTimer = timers[0];
      const nextEvent = this.queue[0];
      const timerAt = nextTimer ? Math.max(nextTimer[1].dueAt, this.now) : Number.POSITIVE_INFINITY;
      const eventAt = nextEvent ? nextEvent.at : Number.POSITIVE_INFINITY;
      const at = Math.min(timerAt, eventAt);
      if (at > until) break;
      this.now = at;
      if (eventAt <= timerAt) {
        this.queue.shift();
        this.step(nextEvent!.event, at);
      } else {
        this.step(fired(this.timerSpec(nextTimer![0]), at), at);
      }
    }
    this.now = until;
    return this;
  }

  private step(event: EventEnvelope, at: number): void {
    const effects = this.scenario.run({ event, at });
    for (const moved of ofType(effects, 'moved')) {
      if (moved.decision) this.decisions.set(moved.eventId, moved.decision);
    }
    for (const offer of ofType(effects, 'episodeOffered')) {
      if (offer.job.mode !== 'start') continue;
      const { episodeId, triggerEventId } = offer.job;
      this.push(at + 100, started(episodeId, at + 100));
      const n = ++this.replyCounter;
      this.push(
        at + this.replyAfterMs,
        fact(
          EventKind.MessageSent,
          {
            actionId: `a-${episodeId}`,
            episodeId,
            triggerEventId,
            targetType: 'group',
            targetId: this.groupId,
            segmentIndex: 0,
            segmentCount: 1,
            text: '嗯嗯我觉得可以试试',
            attempts: 1,
            onebotMessageId: `bot-${this.groupId}-${n}`,
          },
          at + this.replyAfterMs,
          this.groupId,
        ),
      );
      this.replies.push({ triggerEventId, at: at + this.replyAfterMs, thread: offer.episode.thread });
    }
  }

  decisionOf(event: EventEnvelope): DecisionRecord {
    const d = this.decisions.get(event.id);
    if (!d) throw new Error(`no decision about ${event.id} (${(event.payload as { text: string }).text})`);
    return d;
  }

  repliedTo(event: EventEnvelope): boolean {
    return this.replies.some((r) => r.triggerEventId === event.id);
  }
}
