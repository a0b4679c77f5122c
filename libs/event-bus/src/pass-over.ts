import { groupsPassedOver } from '@app/contracts';

/**
 * Passing consumer groups over entries they would only skip (ADR 0044). A script that appends entries to one
 * partition stream finds, before its XADDs, which of the groups that handle none of the appended kinds have read the
 * whole stream (`lag` 0), and after them moves those groups' read position to its last entry (`XGROUP SETID …
 * ENTRIESREAD`, which keeps the lag exact). Their blocked readers are not woken; they never read, parse or acknowledge
 * the entries. A group still behind (entries it has not read yet) reads the new entries as before: moving it would
 * pass over entries it wants. On a Redis without consumer-group lag (before 7.0) no group qualifies.
 */

/**
 * The script argument naming the groups a writer of `kinds` may pass over: names joined by newlines; '' for none, and
 * for an append of nothing.
 */
export function passOverArgument(kinds: readonly string[]): string {
  return kinds.length === 0 ? '' : groupsPassedOver(kinds).join('\n');
}

/**
 * Lua, before the XADDs: the local `passing` lists `{group, entries-read}` for the groups named in `groupsArg` that
 * have read all of `stream` (none when the stream does not exist yet, which `XINFO` answers with an error: it has no
 * groups).
 */
export function passOverBefore(stream: string, groupsArg: string): string {
  return `local passing = {}
local groups = ${groupsArg} ~= '' and redis.pcall('XINFO', 'GROUPS', ${stream})
if groups and not groups.err then
  local named = {}
  for name in string.gmatch(${groupsArg}, '[^\\n]+') do named[name] = true end
  for _, info in ipairs(groups) do
    local name, lag, read
    for j = 1, #info, 2 do
      local field = info[j]
      if field == 'name' then name = info[j + 1]
      elseif field == 'lag' then lag = info[j + 1]
      elseif field == 'entries-read' then read = info[j + 1] end
    end
    if named[name] and lag == 0 and read then passing[#passing + 1] = { name, read } end
  end
end`;
}

/** Lua, after the XADDs: move each passing group to `lastId`, `appended` entries further on. */
export function passOverAfter(stream: string, lastId: string, appended: string): string {
  return `if ${appended} > 0 then
  for _, p in ipairs(passing) do redis.call('XGROUP', 'SETID', ${stream}, p[1], ${lastId}, 'ENTRIESREAD', p[2] + ${appended}) end
end`;
}
