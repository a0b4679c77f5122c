import { plainToInstance, Type } from 'class-transformer';
import {
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateIf,
  validateSync,
  type ValidationError,
} from 'class-validator';
import { parse as parseYaml } from 'yaml';
import {
  QunliError,
  TOOL_PERMISSIONS,
  TOOL_VISIBILITIES,
  type ToolPermission,
  type ToolVisibility,
} from '@app/contracts';

/** One MCP server of `QUNLI_MCP_SERVERS`. */
export class McpServerConfig {
  @IsIn(['stdio', 'http'])
  transport!: 'stdio' | 'http';

  /** stdio: the program to start. */
  @ValidateIf((c: McpServerConfig) => c.transport === 'stdio')
  @IsString()
  command?: string;

  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  args?: string[];

  @IsOptional()
  @IsObject()
  env?: Record<string, string>;

  /** http: the streamable HTTP endpoint. */
  @ValidateIf((c: McpServerConfig) => c.transport === 'http')
  @Matches(/^https?:\/\//)
  url?: string;

  @IsOptional()
  @IsObject()
  headers?: Record<string, string>;

  /** Who may cause calls of this server's tools (default member). */
  @IsOptional()
  @IsIn(TOOL_PERMISSIONS)
  permission?: ToolPermission;

  /** Default deferred: found through tool_search. */
  @IsOptional()
  @IsIn(TOOL_VISIBILITIES)
  visibility?: ToolVisibility;

  @IsOptional()
  @IsInt()
  @Min(100)
  timeoutMs?: number;

  @IsOptional()
  @IsInt()
  @Min(100)
  @Max(20_000)
  maxResultChars?: number;

  /** Only these tools of the server (default all). */
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  tools?: string[];

  /** Tools of this server change things (sends, writes); default false. */
  @IsOptional()
  sideEffect?: boolean;
}

class McpServersFile {
  @IsObject()
  @Type(() => Object)
  servers!: Record<string, unknown>;
}

const SERVER_NAME = /^[a-z][a-z0-9_]{0,23}$/;

function flatten(errors: ValidationError[], prefix: string): string[] {
  return errors.flatMap((e) => [
    ...(e.constraints ? [`${prefix}${e.property} ${Object.values(e.constraints).join(', ')}`] : []),
    ...flatten(e.children ?? [], `${prefix}${e.property}.`),
  ]);
}

/** Parse and validate the MCP servers file; throws `MCP.CONFIG_INVALID` naming every bad field. */
export function parseMcpServers(text: string, source: string): Map<string, McpServerConfig> {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new QunliError('MCP.CONFIG_INVALID', `${source} is not valid YAML: ${(error as Error).message}`, { source });
  }
  if (raw === null || raw === undefined) return new Map();
  const file = plainToInstance(McpServersFile, raw);
  const problems = flatten(validateSync(file), '');
  const servers = new Map<string, McpServerConfig>();
  for (const [name, value] of Object.entries(file.servers ?? {})) {
    if (!SERVER_NAME.test(name)) problems.push(`servers.${name}: name must match ${SERVER_NAME}`);
    const config = plainToInstance(McpServerConfig, value);
    problems.push(...flatten(validateSync(config, { forbidUnknownValues: true }), `servers.${name}.`));
    servers.set(name, config);
  }
  if (problems.length > 0) {
    throw new QunliError('MCP.CONFIG_INVALID', `${source}: ${problems.join('; ')}`, { source, problems });
  }
  return servers;
}

/** The registry name of an MCP tool: `mcp_<server>_<tool>`, in the characters function names allow. */
export function mcpToolName(server: string, tool: string): string {
  const clean = tool
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return `mcp_${server}_${clean}`.slice(0, 64);
}
