import type { DisclosureLevel } from '@app/contracts';
import type { ActivityView, AgendaView } from '../stores/memory.views.js';
import { clockTime, span } from './time-text.rules.js';

/*
 * 【你正在做的事】 (ADR-0001 §10), built from the one life line at the moment of the question: every group reads
 * the same activity, progress and beats; only how much is said differs (the group's disclosure level).
 */

export interface ActivitySectionInput {
  agenda: AgendaView | null;
  /** The newest activity started at or before `now`. */
  activity: ActivityView | null;
  /** Its beats up to `now`, oldest first. */
  beats: { text: string; at: Date }[];
  groupId: string | null;
  now: Date;
}

export function disclosureFor(agenda: AgendaView | null, groupId: string | null): DisclosureLevel {
  if (!agenda) return 'open';
  if (groupId === null || groupId.startsWith('private:')) return 'open';
  return agenda.groupDisclosure[groupId] ?? agenda.defaultDisclosure;
}

function phaseAt(activity: ActivityView, progress: number): string | null {
  if (activity.phases.length === 0) return activity.phase;
  return (activity.phases.find((p) => progress < p.until) ?? activity.phases[activity.phases.length - 1]!).name;
}

/** The section body (cognition adds the 【你正在做的事】 header), or null when the life line has nothing yet. */
export function activitySection(input: ActivitySectionInput): string | null {
  const { agenda, activity, now } = input;
  if (!activity) return null;
  const tz = agenda?.timezone ?? 'Asia/Shanghai';
  const level = disclosureFor(agenda, input.groupId);
  const plannedEnd = activity.startedAt.getTime() + activity.expectedDurationMinutes * 60_000;
  const ended =
    (activity.completedAt !== null && activity.completedAt.getTime() <= now.getTime()) || plannedEnd <= now.getTime();
  const next =
    activity.nextTitle && activity.nextAt && activity.nextAt.getTime() >= now.getTime()
      ? `${clockTime(activity.nextAt, tz)} ${activity.nextTitle}`
      : null;

  if (level === 'private' || (activity.private && level !== 'open')) {
    return ['当前活动：在忙自己的事', '（在这个群不说具体在做什么，也不要编别的事）'].join('\n');
  }
  if (ended) {
    const lines = [`刚做完：${activity.title}（${clockTime(activity.startedAt, tz)} 开始）`];
    if (next) lines.push(`接下来：${next}`);
    return lines.join('\n');
  }

  const elapsed = now.getTime() - activity.startedAt.getTime();
  const progress = Math.min(1, Math.max(0, elapsed / (activity.expectedDurationMinutes * 60_000)));
  const phase = phaseAt(activity, progress);
  const lines: string[] = [];
  lines.push(
    level === 'open' && activity.description
      ? `当前活动：${activity.title}——${activity.description}`
      : `当前活动：${activity.title}`,
  );
  if (level === 'open' && activity.detail) lines.push(`细节：${activity.detail}`);
  lines.push(`开始时间：${clockTime(activity.startedAt, tz)}（已经 ${span(elapsed)}）`);
  lines.push(`阶段/进度：${phase ? `${phase}，` : ''}约 ${Math.round(progress * 100)}%`);
  if (level === 'open' && input.beats.length > 0) {
    const recent = input.beats.slice(-2).map((b) => `${b.text}（${clockTime(b.at, tz)}）`);
    lines.push(`最近片段：${recent.join('；')}`);
  }
  if (next) lines.push(`接下来：${next}`);
  const mood = activity.mood ?? agenda?.mood;
  if (level === 'open' && mood) lines.push(`心情：${mood}`);
  if (level === 'vague') lines.push('（在这个群只简单说在干什么，不讲细节和片段）');
  return lines.join('\n');
}
