import {
  botReplied,
  DEFAULT_THREAD_SETTINGS as S,
  joinThread,
  linkMessage,
  type LinkInput,
  type ThreadState,
} from './thread-linking.js';

const T0 = Date.parse('2026-12-01T08:00:00.000Z');
let n = 0;

function msg(senderId: string, text: string, atSec: number, extra: Partial<LinkInput> = {}): LinkInput {
  n++;
  return {
    eventId: `e${n}`,
    messageId: `m${n}`,
    senderId,
    text,
    at: T0 + atSec * 1000,
    atUserIds: [],
    addressesBot: false,
    ...extra,
  };
}

/** Link and join each message in turn; returns the thread id of each. */
function chat(...inputs: LinkInput[]): { threads: Record<string, ThreadState>; ids: string[]; links: string[] } {
  const threads: Record<string, ThreadState> = {};
  const ids: string[] = [];
  const links: string[] = [];
  for (const input of inputs) {
    const { threadId, link } = linkMessage(threads, input, S);
    threads[threadId] = joinThread(threads[threadId], threadId, input);
    ids.push(threadId);
    links.push(link);
  }
  return { threads, ids, links };
}

describe('thread linking', () => {
  it('the same speaker going on, and the flow of a conversation, stay in one thread', () => {
    const { ids, links } = chat(
      msg('alice', '新番看了吗', 0),
      msg('alice', '第三集超好哭', 5),
      msg('bob', '还没看', 20),
    );
    expect(new Set(ids).size).toBe(1);
    expect(links).toEqual(['new', 'speaker', 'flow']);
  });

  it('a long gap starts a new thread; a reply to an old message goes back to its thread', () => {
    const first = msg('alice', '周末去爬山吗', 0);
    const later = msg('bob', '明天考试复习得怎么样', 300);
    const back = msg('carol', '我去！', 320, { replyToMessageId: first.messageId });
    const { ids, links } = chat(first, later, back);
    expect(ids[1]).not.toBe(ids[0]);
    expect(ids[2]).toBe(ids[0]);
    expect(links).toEqual(['new', 'new', 'reply']);
  });

  it('several live threads: shared topic words and @ chains pick the right one', () => {
    const hike = msg('alice', '周末爬山带什么装备', 0);
    const exam = msg('bob', '高数考试复习到哪了', 100);
    const hike2 = msg('dave', '爬山装备我有登山杖', 130);
    const atBob = msg('erin', '同问', 140, { atUserIds: ['bob'] });
    const { ids, links } = chat(hike, exam, hike2, atBob);
    expect(ids[2]).toBe(ids[0]);
    expect(links[2]).toBe('overlap');
    expect(ids[3]).toBe(ids[1]);
    expect(links[3]).toBe('at');
  });

  it('open questions: asked, still open after chatter, answered by someone else', () => {
    const { threads, ids } = chat(msg('alice', '有人知道猫咪吐毛球怎么办吗', 0), msg('bob', '哈哈', 3));
    const t = threads[ids[0]!]!;
    expect(t.openQuestions.map((q) => q.senderId)).toEqual(['alice']);
    const answered = joinThread(t, t.id, msg('carol', '喂化毛膏', 10));
    expect(answered.openQuestions).toEqual([]);
    expect(answered.participants).toEqual(['alice', 'bob', 'carol']);
  });

  it('the bot’s reply joins the thread: it becomes a participant, its message can be quoted into the thread', () => {
    const { threads, ids } = chat(msg('alice', '猫咪吐毛球怎么办？', 0));
    const t = botReplied(threads[ids[0]!]!, { at: T0 + 5000, partnerId: 'alice', messageId: 'bot-1', text: '化毛膏' });
    expect(t).toMatchObject({ botJoined: true, botPartner: 'alice', lastSpeaker: 'self', openQuestions: [] });
    expect(t.participants).toContain('self');
    const quote = msg('zed', '真的有用吗', 900, { replyToMessageId: 'bot-1' });
    expect(linkMessage({ [t.id]: { ...t, lastAt: T0 + 890_000 } }, quote, S)).toEqual({
      threadId: t.id,
      link: 'reply',
    });
  });
});
