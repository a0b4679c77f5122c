/** What every memory tool shares: read-only, quick, safe to repeat, any member may cause it. */
export const MEMORY_TOOL_DEFAULTS = {
  permission: 'member',
  timeoutMs: 5000,
  sideEffect: false,
  idempotent: true,
  maxResultChars: 1500,
  maxRetries: 1,
  requiresConfirmation: false,
  source: 'memory',
} as const;
