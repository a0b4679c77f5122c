import { Injectable } from '@nestjs/common';
import { QunliConfig } from '@app/platform';
import { queryWords } from '../rules/query-words.rules.js';
import { jargonSection, memorySection, senderSection } from '../rules/memory-section.rules.js';
import { AgendaRepository } from '../stores/agenda.repository.js';
import { FactsRepository } from '../stores/facts.repository.js';
import { JargonRepository } from '../stores/jargon.repository.js';
import { MemoryMessagesRepository } from '../stores/memory-messages.repository.js';
import { SummariesRepository } from '../stores/summaries.repository.js';
import { ThreadBufferStore } from '../stores/thread-buffer.store.js';

/** The prompt's recent window (ADR §11: the thread's last 8–12 messages); event-memory search looks beyond it. */
export const RECENT_WINDOW = 12;
const MESSAGE_HITS = 3;
const RELATED_THREADS = 1;
const PROFILE_FACTS = 8;

export interface RetrievalQuery {
  groupId: string;
  text: string;
  now: Date;
  threadId?: string;
  /** Leave out the newest messages (the prompt shows them already). */
  skipRecent?: number;
  limit?: number;
}

/**
 * Retrieval for a prompt (ADR-0016): the thread's summary, related older threads, the top-k facts and older
 * messages matching the question, the sender's profile, matched jargon. Postgres full-text search over
 * jieba-segmented terms; no vector store. Always scoped to one group (plus explicitly shared fact categories).
 */
@Injectable()
export class MemoryRetrieval {
  private readonly shared: string[];

  constructor(
    private readonly messages: MemoryMessagesRepository,
    private readonly facts: FactsRepository,
    private readonly summaries: SummariesRepository,
    private readonly jargon: JargonRepository,
    private readonly threads: ThreadBufferStore,
    private readonly agenda: AgendaRepository,
    private readonly config: QunliConfig,
  ) {
    this.shared = [...config.memorySharedCategories];
  }

  private get selfName(): string {
    return this.config.nicknames[0] ?? '你';
  }

  private async timezone(): Promise<string> {
    return (await this.agenda.agenda())?.timezone ?? 'Asia/Shanghai';
  }

  /** 【相关记忆】 for a question in a group. */
  async memory(q: RetrievalQuery): Promise<string | null> {
    const words = queryWords(q.text);
    const threadId = q.threadId ?? (await this.threads.groupThread(q.groupId))?.threadId ?? null;
    const k = q.limit ?? this.config.QUNLI_MEMORY_TOP_K;
    const [summary, related, facts, messages, timezone] = await Promise.all([
      threadId ? this.summaries.latest(q.groupId, threadId) : Promise.resolve(null),
      this.summaries.related(q.groupId, words, threadId, RELATED_THREADS),
      this.facts.search(q.groupId, words, this.shared, k),
      this.messages.search(q.groupId, words, {
        skipRecent: q.skipRecent ?? RECENT_WINDOW,
        limit: Math.min(k, MESSAGE_HITS),
        before: q.now,
      }),
      this.timezone(),
    ]);
    return memorySection({ summary, related, facts, messages, now: q.now, timezone, selfName: this.selfName });
  }

  /** What the group knows about one person. */
  async profile(groupId: string, userId: string, name: string): Promise<string | null> {
    const [presence, facts, timezone] = await Promise.all([
      this.messages.presence(groupId, userId),
      this.facts.about(groupId, userId, this.shared, PROFILE_FACTS),
      this.timezone(),
    ]);
    return senderSection({ userId, name, presence, facts, timezone });
  }

  /** The group's learned words that occur in `text`: no model call. */
  async jargonIn(groupId: string, text: string): Promise<string | null> {
    return jargonSection(await this.jargon.matching(groupId, text, 5));
  }

  async jargonLookup(groupId: string, term: string): Promise<string | null> {
    return jargonSection(await this.jargon.lookup(groupId, term, 5));
  }
}
