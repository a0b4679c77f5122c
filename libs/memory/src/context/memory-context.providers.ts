import { Injectable } from '@nestjs/common';
import type { PromptContextProvider, PromptContextRequest, PromptSection } from '@app/contracts';
import { activitySection } from '../rules/activity-section.rules.js';
import { MemoryRetrieval } from '../retrieval/memory-retrieval.service.js';
import { AgendaRepository } from '../stores/agenda.repository.js';

/** 【你正在做的事】 from the one life line, with the group's disclosure. */
@Injectable()
export class ActivityContextProvider implements PromptContextProvider {
  readonly section: PromptSection = 'activity';

  constructor(private readonly agenda: AgendaRepository) {}

  async provide(request: PromptContextRequest): Promise<string | null> {
    const [agenda, latest] = await Promise.all([this.agenda.agenda(), this.agenda.latestStartedWithBeats(request.now)]);
    return activitySection({
      agenda,
      activity: latest?.activity ?? null,
      beats: latest?.beats ?? [],
      groupId: request.groupId,
      now: request.now,
    });
  }
}

/** 【相关记忆】: thread summary, top-k facts and older messages relevant to the message being answered. */
@Injectable()
export class MemoryContextProvider implements PromptContextProvider {
  readonly section: PromptSection = 'memory';

  constructor(private readonly retrieval: MemoryRetrieval) {}

  provide(request: PromptContextRequest): Promise<string | null> {
    if (request.groupId === null) return Promise.resolve(null);
    return this.retrieval.memory({
      groupId: request.groupId,
      text: request.text,
      now: request.now,
      ...(request.threadId !== undefined ? { threadId: request.threadId } : {}),
    });
  }
}

/** 【当前消息发送者】: the sender's profile in this group. */
@Injectable()
export class SenderContextProvider implements PromptContextProvider {
  readonly section: PromptSection = 'sender';

  constructor(private readonly retrieval: MemoryRetrieval) {}

  provide(request: PromptContextRequest): Promise<string | null> {
    if (request.groupId === null) return Promise.resolve(null);
    return this.retrieval.profile(request.groupId, request.senderId, request.senderName);
  }
}

/** Group words in the message with their learned meanings, matched without a model call. */
@Injectable()
export class JargonContextProvider implements PromptContextProvider {
  readonly section: PromptSection = 'jargon';

  constructor(private readonly retrieval: MemoryRetrieval) {}

  provide(request: PromptContextRequest): Promise<string | null> {
    if (request.groupId === null) return Promise.resolve(null);
    return this.retrieval.jargonIn(request.groupId, request.text);
  }
}
