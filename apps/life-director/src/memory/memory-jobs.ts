import { plainToInstance, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
  validateSync,
} from 'class-validator';
import { flattenValidationErrors, SUMMARY_REASONS, ValidationFailed, type SummaryReason } from '@app/contracts';

/** At most this many words are judged in one call. */
export const MAX_JARGON_TERMS = 10;

function validated<T extends object>(cls: new () => T, plain: object, what: string): T {
  const job = plainToInstance(cls, { ...plain });
  const errors = flattenValidationErrors(validateSync(job, { forbidUnknownValues: true, whitelist: true }));
  if (errors.length > 0) throw new ValidationFailed(what, errors);
  return job;
}

/** `memory-summaries` job: summarise a thread through a message ordinal (every N messages, or when idle). */
export class ThreadSummaryJob {
  @IsString()
  @MaxLength(64)
  groupId!: string;

  @IsString()
  @MaxLength(200)
  threadId!: string;

  @IsInt()
  @Min(1)
  through!: number;

  @IsIn(SUMMARY_REASONS)
  reason!: SummaryReason;

  static create(plain: Pick<ThreadSummaryJob, 'groupId' | 'threadId' | 'through' | 'reason'>): ThreadSummaryJob {
    return validated(ThreadSummaryJob, plain, 'thread summary job');
  }
}

/** `memory-maintenance` job `jargon-scan`: look for a group's candidate words. */
export class JargonScanJob {
  @IsString()
  @MaxLength(64)
  groupId!: string;

  static create(plain: Pick<JargonScanJob, 'groupId'>): JargonScanJob {
    return validated(JargonScanJob, plain, 'jargon scan job');
  }
}

/** One candidate word of a `jargon-meanings` job. */
export class JargonTerm {
  @IsString()
  @MaxLength(32)
  term!: string;

  @IsInt()
  @Min(1)
  sightings!: number;

  @IsInt()
  @Min(1)
  users!: number;
}

/** `memory-maintenance` job `jargon-meanings`: infer a scan's candidate words' meanings, in one utils call. */
export class JargonMeaningsJob {
  @IsString()
  @MaxLength(64)
  groupId!: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_JARGON_TERMS)
  @ValidateNested({ each: true })
  @Type(() => JargonTerm)
  terms!: JargonTerm[];

  static create(plain: {
    groupId: string;
    terms: Pick<JargonTerm, 'term' | 'sightings' | 'users'>[];
  }): JargonMeaningsJob {
    return validated(JargonMeaningsJob, plain, 'jargon meanings job');
  }

  /**
   * A `jargon-meaning` job, one word each, as versions before ADR 0051 queued them: still judged after an upgrade,
   * as a batch of one.
   */
  static fromSingle(plain: {
    groupId?: unknown;
    term?: unknown;
    sightings?: unknown;
    users?: unknown;
  }): JargonMeaningsJob {
    const { groupId, term, sightings, users } = plain;
    return validated(JargonMeaningsJob, { groupId, terms: [{ term, sightings, users }] }, 'jargon meaning job');
  }
}
