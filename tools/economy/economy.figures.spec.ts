import { economyFigures, type HandledMessage } from './economy.figures.js';

const m = (direct: boolean, deliberated: boolean, answered: boolean, groupId = '1'): HandledMessage => ({
  groupId,
  direct,
  deliberated,
  answered,
});

describe('economy figures', () => {
  it('counts ambient and direct messages, answered shares and calls beyond the direct ones per 100 ambient', () => {
    const figures = economyFigures({
      messages: [
        m(true, true, true),
        m(true, true, false),
        ...Array.from({ length: 200 }, (_, i) => m(false, i < 4, i < 2)),
      ],
      episodes: [
        { direct: true, steps: 1 },
        { direct: true, steps: 1 },
        { direct: false, steps: 1 },
        { direct: false, steps: 1 },
      ],
      llmCalls: 4,
      llmTokens: 6000,
      deliveriesByTarget: { 'group:1': 3, 'private:9': 1 },
    });
    expect(figures).toMatchObject({
      ambient: 200,
      direct: 2,
      llmCallsDirect: 2,
      llmCallsPer100Ambient: 1,
      directAnswered: 0.5,
      ambientAnswered: 0.01,
      handled: 6,
      tokensPerHandled: 1000,
      sendsPerGroup: { '1': 3 },
    });
  });

  it('counts calls no direct episode step accounts for against ambient, so overhead is never hidden', () => {
    const figures = economyFigures({
      messages: [m(true, true, true), ...Array.from({ length: 100 }, () => m(false, false, false))],
      episodes: [{ direct: true, steps: 1 }],
      llmCalls: 3, // one episode step, plus two calls outside any step
      llmTokens: 0,
      deliveriesByTarget: {},
    });
    expect(figures.llmCallsDirect).toBe(1);
    expect(figures.llmCallsPer100Ambient).toBe(2);
    expect(figures.llmCallsOutsideEpisodes).toBe(2);
  });

  it('attributes every recorded call of a direct episode (planner and replyer) to it, not one per step', () => {
    const figures = economyFigures({
      messages: [m(true, true, true), ...Array.from({ length: 100 }, (_, i) => m(false, i === 0, i === 0))],
      episodes: [
        { direct: true, steps: 1, llmCalls: 2 },
        { direct: false, steps: 1, llmCalls: 2 },
      ],
      llmCalls: 5,
      llmTokens: 0,
      deliveriesByTarget: {},
    });
    expect(figures).toMatchObject({
      llmCallsDirect: 2,
      llmCallsAmbientEpisodes: 2,
      llmCallsOutsideEpisodes: 1,
      llmCallsPer100Ambient: 3,
    });
  });

  it('is all zeros, not NaN, for a transcript with nothing in it', () => {
    expect(
      economyFigures({ messages: [], episodes: [], llmCalls: 0, llmTokens: 0, deliveriesByTarget: {} }),
    ).toMatchObject({
      ambient: 0,
      direct: 0,
      llmCallsPer100Ambient: 0,
      tokensPerHandled: 0,
      directAnswered: 0,
    });
  });
});
