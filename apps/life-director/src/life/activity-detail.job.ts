import { plainToInstance } from 'class-transformer';
import { IsString, MaxLength, validateSync } from 'class-validator';
import { flattenValidationErrors, ValidationFailed } from '@app/contracts';

/** The `life-details` job: ask the utils model for one line of detail about an activity that just started. */
export class ActivityDetailJob {
  @IsString()
  @MaxLength(64)
  activityId!: string;

  @IsString()
  @MaxLength(64)
  title!: string;

  @IsString()
  @MaxLength(1000)
  description!: string;

  /** Validates; throws `ValidationFailed` naming every bad field, so an invalid job never exists. */
  static create(plain: Pick<ActivityDetailJob, 'activityId' | 'title' | 'description'>): ActivityDetailJob {
    const job = plainToInstance(ActivityDetailJob, { ...plain });
    const errors = flattenValidationErrors(validateSync(job, { forbidUnknownValues: true }));
    if (errors.length > 0) throw new ValidationFailed('activity detail job', errors);
    return job;
  }

  /** One detail per activity: BullMQ ignores a second add with the same id. */
  jobId(): string {
    return `detail-${this.activityId.replace(/[^A-Za-z0-9-]/g, '_')}`;
  }
}
