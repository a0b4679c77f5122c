import { planReply, unfolded } from './fold.rules.js';

const settings = { maxChars: 20, maxMessages: 3, foldChars: 50 };

describe('planning a reply: split, or fold into a forward message', () => {
  it('splits a short reply into chat messages, quoting in the first', () => {
    expect(planReply('一\n二', settings, 'at', false, '9')).toEqual({
      form: 'text',
      parts: ['一', '二'],
      polished: false,
      at: 'at',
      quoteMessageId: '9',
    });
    expect(planReply('  ', settings, 'at', false)).toBeUndefined();
  });

  it('folds a reply beyond the threshold, keeping the plain split as the fallback', () => {
    const long = Array.from({ length: 6 }, (_, i) => `第${i}行有一点长的内容`).join('\n');
    const plan = planReply(long, settings, 'at', true)!;
    expect(plan.form).toBe('forward');
    expect(plan.parts).toHaveLength(6);
    expect(plan.fallback).toHaveLength(3);
    const plain = unfolded(plan, 'later');
    expect(plain).toMatchObject({ form: 'text', parts: plan.fallback, at: 'later', polished: true });
    expect(plain.parts.join('\n').split('\n')).toEqual(long.split('\n'));
  });
});
