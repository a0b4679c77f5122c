/** Messages between the scheduler's main thread and its projector thread. */
export type ToProjector = { type: 'metrics'; id: number } | { type: 'stop' };

export type FromProjector =
  | { type: 'ready' }
  | { type: 'metrics'; id: number; text: string }
  | { type: 'stopped' }
  | { type: 'failed'; message: string };
