import { jargonMessages, parseJargonVerdicts } from '@app/memory';
import { ordinaryWords } from './llm-provider.js';

describe('the harness model', () => {
  it("answers jargon's prompt with a usable verdict on every word it asks about", () => {
    const terms = ['芋圆', '开黑', 'yyds'];
    const messages = jargonMessages(terms.map((term) => ({ term, examples: [`今天又说${term}了`, `${term}是啥`] })));
    const answer = ordinaryWords({ messages });
    expect(answer.verdicts.map((v) => v.term)).toEqual(terms);
    expect(parseJargonVerdicts(JSON.stringify(answer), terms)).toEqual({
      verdicts: terms.map((term) => ({ term, isJargon: false, meaning: '普通词语' })),
      unusable: 0,
    });
  });
});
