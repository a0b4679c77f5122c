import { performance } from 'node:perf_hooks';
import { Injectable } from '@nestjs/common';
import { QunliError, REPLY_MAX_CHARS, type MessagePayload } from '@app/contracts';
import type { EffectivePersona } from '@app/persona';
import { ChatModel, type ChatCallObserver, type ChatMessage } from '@app/llm';
import { HookRegistry } from '../hooks/hook.registry.js';
import { buildReplyerPrompt, type ProvidedSections } from '../prompt/replyer.prompt.js';
import type { ContextMessage } from '@app/contracts';
import { failedCall, type LlmCallRecord } from './planner.js';

export interface ReplyRequest {
  episodeId: string;
  groupId: string | null;
  step: number;
  persona: EffectivePersona;
  selfId: string;
  /** The one message answered, with the same sender's fragments answered with it. */
  target: MessagePayload;
  fragments: MessagePayload[];
  /** What the same sender said after `target` while the episode ran, oldest first. */
  followUps?: MessagePayload[];
  context: ContextMessage[];
  sections: ProvidedSections;
  replyArgs: { msg_id: string; quote?: boolean; intent?: string };
  now: Date;
  signal: AbortSignal;
  observer?: ChatCallObserver;
}

export type ReplyResult =
  { ok: true; text: string; calls: LlmCallRecord[] } | { ok: false; error: QunliError; calls: LlmCallRecord[] };

/** Strip what models like to wrap a chat line in: quotes, a speaker prefix. */
export function cleanReply(text: string, persona: EffectivePersona): string {
  let out = text.trim();
  const names = [persona.identity.name, ...persona.identity.aliases].map((n) =>
    n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
  );
  out = out.replace(new RegExp(`^(${names.join('|')})\\s*[:：]\\s*`), '');
  const quoted = /^[「“"](.*)[」”"]$/su.exec(out);
  if (quoted) out = quoted[1]!.trim();
  return out;
}

/**
 * The replyer (role `replyer`): writes the words of a reply the planner decided on, for one message of one
 * sender, with the persona's voice (ADR §14). Hooks: `replyer.before_request` (model, extra prompt, reply
 * arguments), `replyer.before_model_request` (the messages), `replyer.after_response` (the text, or one
 * regeneration).
 */
@Injectable()
export class Replyer {
  constructor(
    private readonly model: ChatModel,
    private readonly hooks: HookRegistry,
  ) {}

  get modelName(): string {
    return this.model.modelFor('replyer');
  }

  async write(request: ReplyRequest): Promise<ReplyResult> {
    const info = { episodeId: request.episodeId, groupId: request.groupId, step: request.step };
    const task = await this.hooks.run('replyer.before_request', {
      ...info,
      model: null,
      extraPrompt: null,
      replyArgs: { ...request.replyArgs },
    });
    const built = buildReplyerPrompt({
      persona: request.persona,
      selfId: request.selfId,
      groupId: request.groupId,
      trigger: request.target,
      fragments: request.fragments,
      ...(request.followUps?.length ? { followUps: request.followUps } : {}),
      context: request.context,
      activity: null,
      sections: request.sections,
      ...(task.replyArgs.intent ? { intent: task.replyArgs.intent } : {}),
      ...(task.extraPrompt ? { extraPrompt: task.extraPrompt } : {}),
      now: request.now,
    });
    const prepared = await this.hooks.run('replyer.before_model_request', { ...info, messages: built });
    const calls: LlmCallRecord[] = [];
    const model = task.model ?? this.model.modelFor('replyer');
    for (let round = 0; round < 2; round++) {
      const began = performance.now();
      let content: string | null;
      try {
        const response = await this.model.complete({
          role: 'replyer',
          ...(task.model ? { model: task.model } : {}),
          messages: prepared.messages as ChatMessage[],
          signal: request.signal,
          subjectText: request.target.text,
          subjectMessageId: request.target.messageId,
          ...(request.observer ? { observer: request.observer } : {}),
        });
        calls.push({
          role: 'replyer',
          model: response.model || model,
          outcome: 'ok',
          tokensIn: response.usage.promptTokens,
          tokensOut: response.usage.completionTokens,
          estimated: response.usageEstimated === true,
          attempts: response.attempts ?? 1,
          latencyMs: performance.now() - began,
        });
        content = response.content;
      } catch (error) {
        if (!(error instanceof QunliError)) throw error;
        calls.push(failedCall('replyer', model, error, began));
        return { ok: false, error, calls };
      }
      const after = await this.hooks.run('replyer.after_response', {
        ...info,
        text: cleanReply(content ?? '', request.persona),
      });
      if (after.regenerate && round === 0) continue;
      const text = after.text.trim();
      if (text === '') {
        return { ok: false, error: new QunliError('EPISODE.EMPTY_REPLY', 'the replyer wrote nothing'), calls };
      }
      if ([...text].length > REPLY_MAX_CHARS) {
        return {
          ok: false,
          error: new QunliError('EPISODE.REPLY_TOO_LONG', `the reply has more than ${REPLY_MAX_CHARS} characters`),
          calls,
        };
      }
      return { ok: true, text, calls };
    }
    return { ok: false, error: new QunliError('EPISODE.EMPTY_REPLY', 'the replyer wrote nothing'), calls };
  }
}
