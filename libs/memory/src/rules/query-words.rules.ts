import { searchWords } from '@app/persistence';

/**
 * Words of a question worth searching memory with: jieba words minus function words and single characters (which
 * match nearly every message). A question of only single characters keeps them, so it can still find something.
 */
const STOP_WORDS = new Set(
  (
    '的 了 是 我 你 他 她 它 们 我们 你们 他们 她们 在 吗 呢 啊 吧 呀 哦 嗯 哈 哈哈 哈哈哈 就 都 也 还 又 和 与 跟 ' +
    '这 那 这个 那个 这样 那样 什么 怎么 怎么样 为什么 哪 哪里 哪儿 谁 多少 几 有 没 没有 不 要 会 能 可以 想 ' +
    '说 看 去 来 到 把 被 给 让 对 很 太 好 吧 啦 嘛 么 呗 一个 一下 知道 觉得 来着 记得 还记得 之前 上次 今天 现在'
  ).split(' '),
);

export function queryWords(text: string, max = 12): string[] {
  const words = searchWords(text).filter((w) => !STOP_WORDS.has(w));
  const long = words.filter((w) => [...w].length > 1);
  return (long.length > 0 ? long : words).slice(0, max);
}

/** A `to_tsquery('simple', …)` text matching any of the words; `null` when there is nothing to search for. */
export function anyWordQuery(words: readonly string[]): string | null {
  const safe = words.filter((w) => !/['\\:&|!()<>*]/.test(w));
  return safe.length === 0 ? null : safe.map((w) => `'${w}'`).join(' | ');
}
