/** Memory's model budget is counted per group in windows of one product hour (ADR-0016). */
export const BUDGET_WINDOW_MS = 3_600_000;

export function budgetWindow(nowMs: number): number {
  return Math.floor(nowMs / BUDGET_WINDOW_MS);
}

/** Product time the window after `nowMs`'s begins: when a denied job may try again. */
export function nextWindowStart(nowMs: number): number {
  return (budgetWindow(nowMs) + 1) * BUDGET_WINDOW_MS;
}

export interface BudgetUse {
  calls: number;
  tokens: number;
}

export interface BudgetCaps {
  callsPerHour: number;
  tokensPerHour: number;
}

/** Whether one more call fits. Tokens are known only afterwards, so a call may overshoot the token cap once. */
export function mayCall(use: BudgetUse, caps: BudgetCaps): boolean {
  return use.calls < caps.callsPerHour && use.tokens < caps.tokensPerHour;
}
