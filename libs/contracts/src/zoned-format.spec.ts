import { zonedFormat, zonedParts } from './zoned-format.js';

describe('zonedFormat', () => {
  const at = new Date('2026-12-03T16:05:09Z');

  it('builds one formatter per locale, time zone and options, and reuses it', () => {
    const options = { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' } as const;
    const first = zonedFormat('zh-CN', 'Asia/Shanghai', options);
    expect(zonedFormat('zh-CN', 'Asia/Shanghai', { ...options })).toBe(first);
    expect(zonedFormat('zh-CN', 'Europe/Berlin', options)).not.toBe(first);
    expect(zonedFormat('en-US', 'Asia/Shanghai', options)).not.toBe(first);
    expect(zonedFormat('zh-CN', 'Asia/Shanghai', { ...options, second: '2-digit' })).not.toBe(first);
  });

  it('formats in the time zone it was asked for, not the process one', () => {
    const options = { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' } as const;
    expect(zonedFormat('zh-CN', 'Asia/Shanghai', options).format(at)).toBe('00:05');
    expect(zonedFormat('zh-CN', 'Europe/Berlin', options).format(at)).toBe('17:05');
  });

  it('names the parts', () => {
    const parts = zonedParts(at, 'en-US', 'Asia/Shanghai', {
      hourCycle: 'h23',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    expect(parts).toMatchObject({ weekday: 'Fri', hour: '00', minute: '05', second: '09' });
  });
});
