import { classifyAnswer } from './ingress-answer.rules.js';

describe('classifyAnswer', () => {
  const structured = JSON.stringify({ error: { code: 'ONEBOT.INVALID_PAYLOAD', message: 'post_type is required' } });

  it('takes every 2xx as accepted', () => {
    expect(classifyAnswer(204, '')).toBe('accepted');
    expect(classifyAnswer(200, 'whatever')).toBe('accepted');
  });

  it('takes a 4xx with a coded error body as a structured rejection, and without one as unstructured', () => {
    expect(classifyAnswer(400, structured)).toBe('rejected');
    expect(classifyAnswer(413, structured)).toBe('rejected');
    expect(classifyAnswer(400, '{"message":"Bad Request"}')).toBe('unstructured');
    expect(classifyAnswer(400, '<html>bad</html>')).toBe('unstructured');
  });

  it('tells "retry later" from a server error and a dropped connection', () => {
    expect(classifyAnswer(503, structured)).toBe('unavailable');
    expect(classifyAnswer(500, structured)).toBe('unstructured');
    expect(classifyAnswer(500, '{"statusCode":500,"message":"Internal server error"}')).toBe('unstructured');
    expect(classifyAnswer(0, '')).toBe('no-answer');
  });
});
