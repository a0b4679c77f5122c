import type { SealedEntry } from './entry-seal.js';
import { passOverAfter, passOverArgument, passOverBefore } from './pass-over.js';
import type { StagedCommand } from './stream-context.js';
import { wireArg } from './wire.js';

/**
 * The commit of one handled entry, as one Lua script on the partition's slot. Unless the event id is already in
 * the consumer group's inbox (a duplicate), it appends the published events, runs the staged commands, records
 * the id in the inbox and acknowledges the entry. A duplicate is only acknowledged. Groups that handle none of the
 * appended kinds and had read the whole stream are moved past the appended entries (ADR 0044).
 *
 * KEYS: stream, inbox, then the keys of every staged command in order.
 * ARGV: group, entryId, eventId, nowMs, groups to pass over (`passOverArgument`), #events, (kind, json, seal)…,
 * #commands, (name, #keys, #args, args…)…
 */
export const COMMIT_SCRIPT = `
local stream, inbox = KEYS[1], KEYS[2]
local group, entry, eventId, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('ZSCORE', inbox, eventId) then
  redis.call('XACK', stream, group, entry)
  return 0
end
${passOverBefore('stream', 'ARGV[5]')}
local events = tonumber(ARGV[6])
local last
local i = 7
for _ = 1, events do
  last = redis.call('XADD', stream, '*', 'k', ARGV[i], 'e', ARGV[i + 1], 'v', ARGV[i + 2])
  i = i + 3
end
${passOverAfter('stream', 'last', 'events')}
local commands = tonumber(ARGV[i]); i = i + 1
local k = 3
for _ = 1, commands do
  local call = { ARGV[i] }
  local nkeys, nargs = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  i = i + 3
  for _ = 1, nkeys do call[#call + 1] = KEYS[k]; k = k + 1 end
  for _ = 1, nargs do call[#call + 1] = ARGV[i]; i = i + 1 end
  redis.call(unpack(call))
end
redis.call('ZADD', inbox, now, eventId)
redis.call('XACK', stream, group, entry)
return 1
`;

export interface CommitInput {
  stream: string;
  inbox: string;
  group: string;
  entryId: string;
  eventId: string;
  nowMs: number;
  /** Published events, validated and sealed. */
  events: SealedEntry[];
  commands: StagedCommand[];
}

/** Flatten a commit into the script's KEYS and ARGV (long string arguments as UTF-8 Buffers: `wireArg`). */
export function commitArguments(input: CommitInput): { keys: string[]; argv: (string | number | Buffer)[] } {
  const keys = [input.stream, input.inbox];
  const argv: (string | number | Buffer)[] = [
    input.group,
    input.entryId,
    input.eventId,
    input.nowMs,
    passOverArgument(input.events.map((event) => event.kind)),
    input.events.length,
  ];
  for (const event of input.events) argv.push(event.kind, event.bytes, event.seal);
  argv.push(input.commands.length);
  for (const command of input.commands) {
    keys.push(...command.keys);
    argv.push(command.command, command.keys.length, command.args.length);
    for (const arg of command.args) argv.push(wireArg(arg));
  }
  return { keys, argv };
}
