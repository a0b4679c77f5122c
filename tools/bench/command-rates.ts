/**
 * How many commands of each kind Redis ran between two `INFO commandstats` reads (`commandCalls`), divided by `per`
 * (seconds for a rate, messages for a cost per message), most first; commands that did not run are left out.
 * Commands a Lua script runs count under their own names, and the script call once more (`evalsha`).
 */
export function commandRates(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
  per: number,
): [command: string, rate: number][] {
  return [...after]
    .map(([command, calls]): [string, number] => [command, (calls - (before.get(command) ?? 0)) / per])
    .filter(([, rate]) => rate > 0)
    .sort((a, b) => b[1] - a[1]);
}
