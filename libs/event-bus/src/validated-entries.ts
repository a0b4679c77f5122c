/**
 * Stream entries this process has already validated, by stream and entry id. An entry is immutable, so once one
 * consumer group of the process (the scheduler) validated it, another (the projector, in the same process) can
 * trust the result instead of running class-validator again — validation is most of a handler's CPU. Bounded:
 * the oldest ids are forgotten first.
 */
export class ValidatedEntries {
  private readonly ids = new Set<string>();

  constructor(private readonly capacity = 50_000) {}

  has(stream: string, entryId: string): boolean {
    return this.ids.has(`${stream}\u0000${entryId}`);
  }

  add(stream: string, entryId: string): void {
    const key = `${stream}\u0000${entryId}`;
    if (this.ids.has(key)) return;
    this.ids.add(key);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value!);
  }
}

/** The one per process. */
export const validatedEntries = new ValidatedEntries();
