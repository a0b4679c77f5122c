/**
 * Just enough of PromQL to find the series an expression selects: every `metric{matchers}` (or `{__name__=…}`)
 * with its matchers, skipping functions, aggregations, grouping clauses, ranges, offsets, numbers and strings. The
 * observability tests use it to check that each metric a rule or panel names is one the apps really export.
 */

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
  'atan2',
]);
/** Keywords followed by a parenthesised label list, not an expression. */
const LABEL_LISTS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

export interface SeriesSelector {
  /** The metric name, or undefined for a bare `{…}` selector without `__name__`. */
  name: string | undefined;
  /** The selector as written, usable with `/api/v1/series?match[]=`. */
  text: string;
}

function skipString(expr: string, at: number): number {
  const quote = expr[at]!;
  let i = at + 1;
  while (i < expr.length && expr[i] !== quote) i += expr[i] === '\\' && quote !== '`' ? 2 : 1;
  return i + 1;
}

/** Index just past the bracket that closes the one at `at`, strings inside skipped. */
function skipBalanced(expr: string, at: number, open: string, close: string): number {
  let depth = 0;
  for (let i = at; i < expr.length;) {
    const c = expr[i]!;
    if (c === '"' || c === "'" || c === '`') {
      i = skipString(expr, i);
      continue;
    }
    if (c === open) depth++;
    if (c === close && --depth === 0) return i + 1;
    i++;
  }
  throw new Error(`unbalanced ${open}${close} in: ${expr}`);
}

function nextNonSpace(expr: string, at: number): number {
  let i = at;
  while (i < expr.length && /\s/.test(expr[i]!)) i++;
  return i;
}

export function seriesSelectors(expr: string): SeriesSelector[] {
  const found: SeriesSelector[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '"' || c === "'" || c === '`') {
      i = skipString(expr, i);
    } else if (c === '[') {
      i = skipBalanced(expr, i, '[', ']');
    } else if (c === '#') {
      while (i < expr.length && expr[i] !== '\n') i++;
    } else if (/[0-9.]/.test(c)) {
      while (i < expr.length && /[0-9a-zA-Z.+_]/.test(expr[i]!)) {
        if ((expr[i] === '+' || expr[i] === '-') && !/[eE]/.test(expr[i - 1]!)) break;
        i++;
      }
    } else if (c === '{') {
      const end = skipBalanced(expr, i, '{', '}');
      const text = expr.slice(i, end);
      const name = /__name__\s*=\s*"([^"]+)"/.exec(text)?.[1];
      found.push({ name, text });
      i = end;
    } else if (/[a-zA-Z_:]/.test(c)) {
      let end = i;
      while (end < expr.length && /[a-zA-Z0-9_:]/.test(expr[end]!)) end++;
      const word = expr.slice(i, end);
      const after = nextNonSpace(expr, end);
      const lower = word.toLowerCase();
      if (KEYWORDS.has(lower)) {
        i = LABEL_LISTS.has(lower) && expr[after] === '(' ? skipBalanced(expr, after, '(', ')') : end;
        if (lower === 'offset') {
          i = nextNonSpace(expr, i);
          while (i < expr.length && /[0-9a-zA-Z-]/.test(expr[i]!)) i++;
        }
      } else if (expr[after] === '(' || /^(by|without)\b/i.test(expr.slice(after))) {
        // A function call, or an aggregation written `sum by (x) (…)`.
        i = end;
      } else if (expr[after] === '{') {
        const close = skipBalanced(expr, after, '{', '}');
        found.push({ name: word, text: `${word}${expr.slice(after, close)}` });
        i = close;
      } else {
        found.push({ name: word, text: word });
        i = end;
      }
    } else {
      i++;
    }
  }
  return found;
}

/** Metric names an expression selects. */
export function metricNames(expr: string): string[] {
  return [...new Set(seriesSelectors(expr).flatMap((s) => (s.name === undefined ? [] : [s.name])))];
}
