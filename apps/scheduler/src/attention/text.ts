/*
 * Text measures attention needs on the hot path, with no dictionary: normalised text, CJK character bigrams
 * (plus single-character phrases such as 猫) and Latin words. Bigrams are what keyword-free topic overlap needs in
 * Chinese chat — word boundaries do not matter when two messages share 芋圆 or 考试 — and they are deterministic
 * and cost microseconds, where a segmenter would load a dictionary into every scheduler. The keyword lexicon does
 * proper matching (`keywords/`); these are the cheap signals around it.
 */

const CJK = /[\u3400-\u9fff\uf900-\ufaff]/u;
const WORDISH = /[\p{L}\p{N}]/u;

/** Full-width ASCII to half-width, lower case, collapsed spaces. */
export function normalise(text: string): string {
  return text
    .replace(/[\uff01-\uff5e]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0xfee0))
    .replace(/\u3000/g, ' ')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

/** Bigrams that carry no topic (function words and chat glue). */
const STOP_GRAMS = new Set([
  '尤其',
  '最近',
  '喜欢',
  '各种',
  '什么',
  '怎么',
  '一下',
  '一个',
  '这个',
  '那个',
  '我们',
  '你们',
  '他们',
  '大家',
  '有没',
  '没有',
  '知道',
  '可以',
  '就是',
  '还是',
  '不是',
  '真的',
  '觉得',
  '今天',
  '现在',
  '时候',
  '的话',
  '一点',
  '有人',
  '谁知',
  '研究',
]);

/** Single characters too common to be a topic on their own. */
const STOP_CHARS = new Set([...'的了是我你他她它们在有和就都也不吗呢啊吧呀哦嗯哈么这那个人一上下来去说要会能很还没好']);

/**
 * Topic tokens of a text: CJK bigrams within runs of CJK characters (none with a function character such as 的 or
 * 是, which mostly straddle words), a run of one character as itself, Latin and digit words of two characters or
 * more. Each once.
 */
export function topicTokens(text: string): Set<string> {
  const out = new Set<string>();
  const normal = normalise(text);
  let run = '';
  let word = '';
  const flushRun = () => {
    if (run.length === 1) {
      if (!STOP_CHARS.has(run)) out.add(run);
    } else {
      for (let i = 0; i + 1 < run.length; i++) {
        const gram = run.slice(i, i + 2);
        if (!STOP_GRAMS.has(gram) && !STOP_CHARS.has(gram[0]!) && !STOP_CHARS.has(gram[1]!)) out.add(gram);
      }
    }
    run = '';
  };
  const flushWord = () => {
    if (word.length >= 2) out.add(word);
    word = '';
  };
  for (const ch of normal) {
    if (CJK.test(ch)) {
      flushWord();
      run += ch;
    } else if (WORDISH.test(ch)) {
      flushRun();
      word += ch;
    } else {
      flushRun();
      flushWord();
    }
  }
  flushRun();
  flushWord();
  return out;
}

/** How many of `a`'s tokens `b` has. */
export function shared(a: ReadonlySet<string>, b: ReadonlySet<string> | readonly string[]): string[] {
  const other = b instanceof Set ? b : new Set(b);
  return [...a].filter((token) => other.has(token));
}

/**
 * Chatter that carries nothing to answer: laughter (哈哈, hhh, 笑死), 草, +1, 6, 确实, ellipses and punctuation,
 * single acknowledgements, and messages that are only emoji / faces / stickers (their text is empty or a
 * placeholder). The bot never joins in on these unasked, whatever the other features say.
 */
const CHATTER = new RegExp(
  '^(' +
    [
      '(哈|呵|嘿|嘻|h|a){2,}',
      '草+',
      '艹+',
      '\\+1',
      '6+',
      '(1|2|3)+',
      '[。.,，…~～!！?？]+',
      '(嗯|恩|哦|噢|喔|啊|呃|额|诶|欸|唉|哇|嗷|呜|好|行|对|是|嘛)+',
      '(ok|okk|okay|yes|no|lol|xs|xswl|nb|nbnb|tql|yyds|awsl|gg|wc|woc|orz|qwq|qaq|www+)',
      '(笑死|笑死我了|确实|真的|绝了|牛|牛逼|厉害|可以|好的|收到|懂了|是的|对的|没错|同意|附议|顶|赞|泪目|破防了|离谱|无语|难绷|蚌埠住了|绷不住了|我也是|我也想要)',
    ].join('|') +
    ')[。.!！~～]*$',
  'u',
);

/** Placeholder texts ingress gives non-text segments: `[图片]`, `[表情]`, `[动画表情]`, `[CQ:face,…]`. */
const PLACEHOLDER = /\[[^\]]{0,40}\]/gu;
const EMOJI = /\p{Extended_Pictographic}|[\u{1F3FB}-\u{1F3FF}]|\u200d|\ufe0f/gu;

export function isLowInformation(text: string): boolean {
  const stripped = normalise(text).replace(PLACEHOLDER, '').replace(EMOJI, '').replace(/\s+/g, '');
  if (stripped === '') return true;
  return CHATTER.test(stripped);
}

const QUESTION_END = /[?？]\s*$|[吗嘛呢么][~～。.!！]*$/u;
const QUESTION_WORDS =
  /(怎么|怎样|咋|如何|为什么|为啥|干嘛|啥|什么|哪里|哪儿|哪个|哪家|多少|几点|几个|有没有|是不是|能不能|会不会|要不要|可不可以|谁知道|谁会|谁有|有人知道|有人会|有谁|求推荐|求问|请问|推荐一下|问一下|问下)/u;
const URGENT = /(急|救命|求助|help|在线等|怎么办|救救)/u;

/** 1 for a clear question, 0.6 for question words without a question mark, 0 otherwise. */
export function questionScore(text: string): number {
  const normal = normalise(text);
  if (normal === '') return 0;
  if (QUESTION_END.test(normal)) return 1;
  if (QUESTION_WORDS.test(normal)) return 0.6;
  return 0;
}

export function isUrgent(text: string): boolean {
  return URGENT.test(normalise(text));
}

/** A short quote of a text for reasons and open-question records. */
export function snippet(text: string, max = 24): string {
  const one = normalise(text);
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}
