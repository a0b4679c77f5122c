import { join } from 'node:path';
import { REPO_ROOT } from './processes.js';

/** The MCP test server script (official SDK; stdio by default, `--http <port>` for streamable HTTP). */
export const MCP_TEST_SERVER = join(REPO_ROOT, 'libs/testing/src/mcp-server-script.mjs');
