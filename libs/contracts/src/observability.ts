import { IsBoolean, IsIn, IsInt, IsNumber, IsObject, IsOptional, IsString, MaxLength, Min } from 'class-validator';

/*
 * Facts cognition records for accounting and for the panel: every LLM call with its tokens (`llm.called`, the
 * `llm_calls` table), the persona version in force (`persona.published`) and Maisaka's monitor events
 * (`monitor.recorded`).
 */

export const LLM_ROLES = ['planner', 'replyer', 'utils'] as const;
export type LlmRoleName = (typeof LLM_ROLES)[number];

/** `llm.called`: one LLM call (retries included) and what it cost. */
export class LlmCalledPayload {
  /** Deterministic per call (`<episode>:<step>:<purpose>:<n>`), so a re-run commit is recognisable. */
  @IsString()
  @MaxLength(300)
  callId!: string;

  @IsOptional()
  @IsString()
  episodeId?: string;

  @IsIn(LLM_ROLES)
  role!: LlmRoleName;

  @IsString()
  @MaxLength(200)
  model!: string;

  /** `planner`, `replyer`, `timing_gate`, `summary`, … */
  @IsString()
  @MaxLength(64)
  purpose!: string;

  /** `ok` or the error code (`LLM.ABORTED` for an interrupted call). */
  @IsString()
  @MaxLength(64)
  outcome!: string;

  @IsInt()
  @Min(0)
  tokensIn!: number;

  @IsInt()
  @Min(0)
  tokensOut!: number;

  /** True when the API reported no usage (an aborted stream) and the tokens are estimated from the text. */
  @IsBoolean()
  estimated!: boolean;

  @IsInt()
  @Min(1)
  attempts!: number;

  @IsNumber()
  @Min(0)
  latencyMs!: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  step?: number;
}

/** `persona.published`: the persona policy a process runs with, by content version. Read-only to the model. */
export class PersonaPublishedPayload {
  /** sha256 of the policy's canonical JSON, first 16 hex digits. */
  @IsString()
  @MaxLength(64)
  version!: string;

  @IsString()
  name!: string;

  /** Where it was loaded from (`personas/default.yaml`). */
  @IsString()
  source!: string;

  @IsObject()
  policy!: Record<string, unknown>;
}

/** Maisaka's monitor events, for the panel. */
export const MONITOR_NAMES = [
  'session.start',
  'message.ingested',
  'cycle.start',
  'timing_gate.result',
  'planner.finalized',
  'llm.retry',
  'llm.error',
] as const;
export type MonitorName = (typeof MONITOR_NAMES)[number];

/** `monitor.recorded`: one monitor event. */
export class MonitorRecordedPayload {
  @IsIn(MONITOR_NAMES)
  name!: MonitorName;

  @IsOptional()
  @IsString()
  episodeId?: string;

  @IsObject()
  data!: Record<string, unknown>;
}
