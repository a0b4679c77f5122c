import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { EpisodeJob } from '@app/contracts';
import { envelopeHolds } from '@app/event-bus';

/**
 * `EpisodeJob.create` for a job read back from the queue, cheaper: its envelopes (the trigger and its fragments,
 * most of a job's validation) are checked with the bus's fast check (`envelopeHolds`, docs/adr/0022), the job's own
 * fields with class-validator as `create` checks them. The fast check only says "valid" where class-validator
 * would, so a job accepted here is one `create` accepts; anything else goes to `create`, which decides and throws
 * `ValidationFailed` naming every field.
 */
export function validEpisodeJob(plain: EpisodeJob): EpisodeJob {
  return holds(plain) ? plain : EpisodeJob.create(plain);
}

function holds(plain: unknown): boolean {
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) return false;
  const job = plain as EpisodeJob;
  if (job.mode === 'resume' && job.resume === undefined) return false;
  if (!envelopeHolds(job.trigger)) return false;
  if (job.fragments !== undefined && job.fragments !== null) {
    if (!Array.isArray(job.fragments) || !job.fragments.every((fragment) => envelopeHolds(fragment))) return false;
  }
  return validateSync(plainToInstance(EpisodeJob, job), { forbidUnknownValues: true }).length === 0;
}
