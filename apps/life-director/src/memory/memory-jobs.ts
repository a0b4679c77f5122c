import { plainToInstance } from 'class-transformer';
import { IsIn, IsInt, IsString, MaxLength, Min, validateSync } from 'class-validator';
import { flattenValidationErrors, SUMMARY_REASONS, ValidationFailed, type SummaryReason } from '@app/contracts';

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

/** `memory-maintenance` job `jargon-meaning`: infer one candidate word's meaning. */
export class JargonMeaningJob {
  @IsString()
  @MaxLength(64)
  groupId!: string;

  @IsString()
  @MaxLength(32)
  term!: string;

  @IsInt()
  @Min(1)
  sightings!: number;

  @IsInt()
  @Min(1)
  users!: number;

  static create(plain: Pick<JargonMeaningJob, 'groupId' | 'term' | 'sightings' | 'users'>): JargonMeaningJob {
    return validated(JargonMeaningJob, plain, 'jargon meaning job');
  }
}
