/** Nest injection token of the `AttentionPolicy` the scheduler decides with (issue 7 provides the scorer). */
export const ATTENTION_POLICY = Symbol('ATTENTION_POLICY');
