import { mcpToolName, parseMcpServers } from './mcp-servers.config.js';

describe('MCP servers file', () => {
  it('reads stdio and HTTP servers with their options', () => {
    const servers = parseMcpServers(
      [
        'servers:',
        '  weather:',
        '    transport: stdio',
        '    command: node',
        '    args: [server.js]',
        '    permission: admin',
        '    timeoutMs: 5000',
        '  search:',
        '    transport: http',
        '    url: http://127.0.0.1:9000/mcp',
        '    visibility: core',
      ].join('\n'),
      'mcp.yaml',
    );
    expect(servers.get('weather')).toMatchObject({
      transport: 'stdio',
      command: 'node',
      args: ['server.js'],
      permission: 'admin',
      timeoutMs: 5000,
    });
    expect(servers.get('search')).toMatchObject({
      transport: 'http',
      url: 'http://127.0.0.1:9000/mcp',
      visibility: 'core',
    });
    expect(parseMcpServers('', 'empty.yaml').size).toBe(0);
  });

  it('names every bad field at once', () => {
    let message = '';
    try {
      parseMcpServers(
        'servers:\n  Bad:\n    transport: stdio\n  ok:\n    transport: ftp\n  http:\n    transport: http\n',
        'mcp.yaml',
      );
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('servers.Bad: name must match');
    expect(message).toContain('servers.Bad.command');
    expect(message).toContain('servers.ok.transport');
    expect(message).toContain('servers.http.url');
  });

  it('names MCP tools mcp_<server>_<tool> in function-name characters', () => {
    expect(mcpToolName('weather', 'Weather-Lookup')).toBe('mcp_weather_weather_lookup');
    expect(mcpToolName('s', 'x'.repeat(100))).toHaveLength(64);
  });
});
