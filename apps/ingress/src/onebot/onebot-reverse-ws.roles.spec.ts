import { roleOf } from './onebot-reverse-ws.gateway.js';

describe('reverse WebSocket roles (X-Client-Role)', () => {
  it('takes the header case-insensitively, else the path’s role, else Universal', () => {
    expect(roleOf('universal', undefined)).toEqual({ role: 'Universal' });
    expect(roleOf('API', 'API')).toEqual({ role: 'API' });
    expect(roleOf(undefined, 'Event')).toEqual({ role: 'Event' });
    expect(roleOf(undefined, undefined)).toEqual({ role: 'Universal' });
  });

  it('refuses a role OneBot does not define, or one the path contradicts', () => {
    expect(roleOf('Observer', undefined)).toHaveProperty('refuse');
    expect(roleOf('Event', 'API')).toHaveProperty('refuse');
  });
});
