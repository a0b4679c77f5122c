/**
 * `--name value`, `--name=value` and bare `--flag` (read as `true`) from a tool's arguments; other arguments are
 * left to the tool. One parser for every `npm run <tool>` entry point.
 */
export function cliFlags(argv: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) continue;
    const [name, inline] = arg.slice(2).split('=', 2);
    map.set(name!, inline ?? (argv[i + 1]?.startsWith('--') === false ? argv[++i]! : 'true'));
  }
  return map;
}
