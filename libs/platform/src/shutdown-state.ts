/**
 * Whether the process is stopping. Set by `bootstrap` when SIGTERM arrives, read by `GET /health`, which then
 * answers 503 so an orchestrator stops routing to the process while it finishes the work it holds.
 */
export class ShutdownState {
  private since: number | undefined;

  get draining(): boolean {
    return this.since !== undefined;
  }

  begin(): void {
    this.since ??= Date.now();
  }
}
