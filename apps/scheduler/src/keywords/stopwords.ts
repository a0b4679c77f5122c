/*
 * Words that never become or hit as keywords on their own: particles, pronouns, chat fillers and laughter. Short
 * on purpose: per-group high-frequency filtering (`lexicon.rules.ts`) catches the rest from what a group says.
 */
const WORDS = `的 了 着 过 是 在 有 和 与 或 就 都 也 还 又 很 太 更 最 不 没 没有 吗 呢 吧 啊 呀 哦 噢 嗯 哈 哈哈 哈哈哈 哈哈哈哈
呵呵 嘿嘿 嘻嘻 草 艹 6 66 666 +1 好 好的 好吧 行 可以 对 对啊 是的 不是 我 你 他 她 它 我们 你们 他们 她们 大家 自己 这 那 这个
那个 这些 那些 这样 那样 怎么 什么 为什么 哪 哪里 谁 多少 今天 明天 昨天 现在 刚才 然后 但是 因为 所以 如果 已经 一下 一个 一样
真的 确实 感觉 觉得 知道 就是 还是 可能 应该 还有 其实 一起 一直 东西 时候 问题 事情 图片 表情 动画表情 语音 视频 文件
the a an is are to of and or in on it i you he she we they this that lol ok okay yes no`;

export const STOPWORDS: ReadonlySet<string> = new Set(WORDS.split(/\s+/u).filter((w) => w.length > 0));

/** True when `word` (normalised) carries no topic: a stopword, digits or punctuation only, or one repeated character. */
export function isLowInformation(word: string): boolean {
  if (STOPWORDS.has(word)) return true;
  if (!/[\p{L}]/u.test(word)) return true;
  const chars = [...word];
  return chars.length > 1 && chars.every((c) => c === chars[0]);
}
