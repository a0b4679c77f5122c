import { candidateWords } from './candidate-extraction.js';

describe('candidateWords', () => {
  it('takes nouns and English words, and joins words jieba does not know back together', () => {
    expect(candidateWords('有人玩原神吗，新版本的纳塔好玩吗')).toEqual(
      expect.arrayContaining(['原神', '版本', '纳塔']),
    );
    expect(candidateWords('芋圆今天又来了')).toEqual(['芋圆']);
    expect(candidateWords('今晚开黑吗，三缺一')).toEqual(expect.arrayContaining(['开黑', '三缺一']));
    expect(candidateWords('我觉得Steam Deck比Switch好用')).toEqual(expect.arrayContaining(['steam', 'deck', 'switch']));
  });

  it('finds nothing in chatter', () => {
    expect(candidateWords('哈哈哈哈笑死我了')).toEqual([]);
    expect(candidateWords('+1')).toEqual([]);
    expect(candidateWords('666666')).toEqual([]);
    expect(candidateWords('   ')).toEqual([]);
  });
});
