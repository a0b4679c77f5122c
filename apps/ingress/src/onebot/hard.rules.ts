/**
 * Hard rules (issue 5): inputs ingress never appends, whatever they say, each recorded under the rule's name.
 * The bot's own messages are not here: they are recorded as `message.echoed`, never as input.
 */

export const HARD_RULES = ['other_bot', 'group_not_listed', 'command_prefix'] as const;
export type HardRule = (typeof HARD_RULES)[number];

export interface HardRuleSettings {
  /** `QUNLI_OTHER_BOTS`: accounts of other bots in the groups (their messages would start reply loops). */
  otherBots: ReadonlySet<string>;
  /** `QUNLI_GROUPS`. */
  groups: '*' | ReadonlySet<string>;
  /** `QUNLI_COMMAND_PREFIXES`: messages starting with one are commands another bot or plugin handles. */
  commandPrefixes: readonly string[];
}

export interface RuleSubject {
  userId: string;
  /** Set for group inputs. */
  groupId?: string;
  /** What the sender typed (text segments only), when the input is a message. */
  typed?: string;
}

export function hardRuleFor(subject: RuleSubject, settings: HardRuleSettings): HardRule | undefined {
  if (subject.groupId !== undefined && settings.groups !== '*' && !settings.groups.has(subject.groupId)) {
    return 'group_not_listed';
  }
  if (settings.otherBots.has(subject.userId)) return 'other_bot';
  if (subject.typed !== undefined) {
    const typed = subject.typed.trimStart();
    if (settings.commandPrefixes.some((prefix) => prefix.length > 0 && typed.startsWith(prefix)))
      return 'command_prefix';
  }
  return undefined;
}
