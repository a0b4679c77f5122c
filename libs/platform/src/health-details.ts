/**
 * Facts an app adds to its `/health` answer beyond readiness (ingress: its OneBot connections and their last
 * heartbeat). A contributor never makes the app unready: it reports, the Redis and Postgres checks decide.
 */
export class HealthDetails {
  private readonly contributors = new Map<string, () => Record<string, unknown>>();

  add(name: string, contributor: () => Record<string, unknown>): void {
    this.contributors.set(name, contributor);
  }

  entries(): [string, () => Record<string, unknown>][] {
    return [...this.contributors.entries()];
  }
}
