import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Type, plainToInstance } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
  validateSync,
  type ValidationError,
} from 'class-validator';
import { parse as parseYaml } from 'yaml';
import { DISCLOSURE_LEVELS, QunliError, type DisclosureLevel, type FieldError } from '@app/contracts';
import { CLOCK_TIME, type PersonaPolicy } from '@app/persona';

/*
 * The life script (`personas/life/*.yaml`): the authored library the life director follows. It adds to the
 * persona what the persona file does not say — goals, milestones, phases, beats at given points, disclosure per
 * group — and is read only by the life director; no model ever writes it. A script without `activities` follows
 * the persona's `routine`.
 */

export class ScriptPhase {
  @IsString()
  @IsNotEmpty()
  @MaxLength(32)
  name!: string;

  /** The phase lasts until this share of the activity (0–1]. */
  @IsNumber()
  @Min(0.01)
  @Max(1)
  until!: number;
}

export class ScriptBeat {
  /** When in the activity it happens (0–1). */
  @IsNumber()
  @Min(0)
  @Max(1)
  at!: number;

  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  text!: string;
}

export class ScriptActivity {
  @Matches(CLOCK_TIME, { message: 'must be a time of day as HH:MM (00:00–23:59)' })
  at!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  title!: string;

  @IsString()
  @MaxLength(1000)
  description!: string;

  @IsInt()
  @Min(1)
  @Max(1440)
  durationMinutes!: number;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(8)
  @ValidateNested({ each: true })
  @Type(() => ScriptPhase)
  phases?: ScriptPhase[];

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(8)
  @ValidateNested({ each: true })
  @Type(() => ScriptBeat)
  beats?: ScriptBeat[];

  @IsOptional()
  @IsString()
  @MaxLength(200)
  mood?: string;

  /** The long-term goal this activity serves (its id). */
  @IsOptional()
  @IsString()
  goal?: string;

  /** Told only as "busy with something of my own" where the group is not `open`. */
  @IsOptional()
  @IsBoolean()
  private?: boolean;

  /** Ask the utils model for one line of detail when it starts (if `QUNLI_LIFE_DETAILS` is on). */
  @IsOptional()
  @IsBoolean()
  detail?: boolean;
}

export class ScriptGoal {
  @Matches(/^[a-z0-9-]{1,64}$/, { message: 'must be 1-64 characters of a-z, 0-9 and -' })
  id!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  title!: string;

  @IsString()
  @MaxLength(500)
  description!: string;
}

export class ScriptMilestone {
  @Matches(/^[a-z0-9-]{1,64}$/, { message: 'must be 1-64 characters of a-z, 0-9 and -' })
  id!: string;

  @IsString()
  goal!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  title!: string;

  @IsInt()
  @Min(1)
  afterSessions!: number;
}

export class ScriptDisclosure {
  @IsIn(DISCLOSURE_LEVELS)
  default: DisclosureLevel = 'open';

  @IsOptional()
  @IsObject()
  groups: Record<string, DisclosureLevel> = {};
}

export class LifeScriptFile {
  @Matches(/^[a-z0-9-]{1,64}$/, { message: 'must be 1-64 characters of a-z, 0-9 and -' })
  personaId!: string;

  /** The base mood; defaults to the persona's. */
  @IsOptional()
  @IsString()
  @MaxLength(200)
  mood?: string;

  @IsOptional()
  @ValidateNested()
  @Type(() => ScriptDisclosure)
  disclosure?: ScriptDisclosure;

  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ScriptGoal)
  goals?: ScriptGoal[];

  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ScriptMilestone)
  milestones?: ScriptMilestone[];

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(96)
  @ValidateNested({ each: true })
  @Type(() => ScriptActivity)
  activities?: ScriptActivity[];
}

/** One activity as the life line uses it: phases and beats always present, beats in order. */
export interface LifeActivity {
  at: string;
  title: string;
  description: string;
  durationMinutes: number;
  phases: ScriptPhase[];
  beats: ScriptBeat[];
  mood?: string;
  goalId?: string;
  private: boolean;
  detail: boolean;
}

/** The script the director runs: validated, merged with the persona, versioned by content. */
export interface LifeScript {
  personaId: string;
  /** Content hash: a changed script is announced with a new `personal.agenda.loaded`. */
  version: string;
  timezone: string;
  mood: string;
  defaultDisclosure: DisclosureLevel;
  groupDisclosure: Record<string, DisclosureLevel>;
  goals: ScriptGoal[];
  milestones: ScriptMilestone[];
  activities: LifeActivity[];
}

export const DEFAULT_PHASES: readonly ScriptPhase[] = [
  { name: '刚开始', until: 0.15 },
  { name: '进行中', until: 0.85 },
  { name: '快结束了', until: 1 },
];

export class LifeScriptInvalid extends QunliError {
  constructor(source: string, fields: FieldError[]) {
    super(
      'LIFE.SCRIPT_INVALID',
      `life script ${source} is invalid: ${fields.map((f) => (f.path ? `${f.path} ${f.message}` : f.message)).join('; ')}`,
      { source, fields },
    );
  }
}

const STRICT = { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true } as const;

function flatten(errors: ValidationError[], prefix = ''): FieldError[] {
  return errors.flatMap((error) => {
    const path = prefix ? `${prefix}.${error.property}` : error.property;
    const own = error.constraints ? [{ path, message: Object.values(error.constraints).join(', ') }] : [];
    return [...own, ...flatten(error.children ?? [], path)];
  });
}

/** Validate a parsed life script against the persona it belongs to; throws `LIFE.SCRIPT_INVALID` naming each field. */
export function parseLifeScript(raw: unknown, persona: PersonaPolicy, source = 'life script'): LifeScript {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new LifeScriptInvalid(source, [{ path: '', message: 'must be a mapping' }]);
  }
  const file = plainToInstance(LifeScriptFile, raw, { exposeDefaultValues: true });
  const fields = flatten(validateSync(file, STRICT));
  const goals = file.goals ?? [];
  const goalIds = new Set(goals.map((g) => g.id));
  (file.milestones ?? []).forEach((m, i) => {
    if (!goalIds.has(m.goal)) fields.push({ path: `milestones.${i}.goal`, message: `names no goal (${m.goal})` });
  });
  (file.activities ?? []).forEach((a, i) => {
    if (a.goal !== undefined && !goalIds.has(a.goal)) {
      fields.push({ path: `activities.${i}.goal`, message: `names no goal (${a.goal})` });
    }
    const untils = (a.phases ?? []).map((p) => p.until);
    if (untils.length > 0 && (untils.some((u, j) => j > 0 && u <= untils[j - 1]!) || untils.at(-1) !== 1)) {
      fields.push({ path: `activities.${i}.phases`, message: 'must rise strictly and end at until: 1' });
    }
  });
  for (const [group, level] of Object.entries(file.disclosure?.groups ?? {})) {
    if (!/^[0-9]{1,20}$/.test(group))
      fields.push({ path: `disclosure.groups.${group}`, message: 'key must be a group id' });
    if (!(DISCLOSURE_LEVELS as readonly string[]).includes(level)) {
      fields.push({ path: `disclosure.groups.${group}`, message: `must be one of ${DISCLOSURE_LEVELS.join(', ')}` });
    }
  }
  if (fields.length > 0) throw new LifeScriptInvalid(source, fields);

  const activities: LifeActivity[] = file.activities
    ? file.activities.map((a) => ({
        at: a.at,
        title: a.title,
        description: a.description,
        durationMinutes: a.durationMinutes,
        phases: a.phases?.length ? a.phases : [...DEFAULT_PHASES],
        beats: [...(a.beats ?? [])].sort((x, y) => x.at - y.at),
        ...(a.mood !== undefined ? { mood: a.mood } : {}),
        ...(a.goal !== undefined ? { goalId: a.goal } : {}),
        private: a.private ?? false,
        detail: a.detail ?? false,
      }))
    : persona.routine.map((r) => ({
        at: r.at,
        title: r.title,
        description: r.description,
        durationMinutes: r.durationMinutes,
        phases: [...DEFAULT_PHASES],
        // The persona's beats are told evenly over the activity (one beat: half-way).
        beats: (r.beats ?? []).map((text, i, all) => ({ at: (i + 1) / (all.length + 1), text })),
        private: false,
        detail: false,
      }));
  const script: Omit<LifeScript, 'version'> = {
    personaId: file.personaId,
    timezone: persona.timezone,
    mood: file.mood ?? persona.mood,
    defaultDisclosure: file.disclosure?.default ?? 'open',
    groupDisclosure: { ...(file.disclosure?.groups ?? {}) },
    goals: goals.map((g) => ({ id: g.id, title: g.title, description: g.description })),
    milestones: (file.milestones ?? []).map((m) => ({ ...m })),
    activities,
  };
  const version = createHash('sha256').update(JSON.stringify(script)).digest('hex').slice(0, 16);
  return { ...script, version };
}

export function loadLifeScript(path: string, persona: PersonaPolicy): LifeScript {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new LifeScriptInvalid(path, [{ path: '', message: `could not be read: ${(error as Error).message}` }]);
  }
  return parseLifeScript(raw, persona, path);
}
