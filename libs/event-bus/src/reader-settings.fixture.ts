import type { ReaderSettings } from './partition-reader.js';

/** Reader settings for the bus's medium specs: small, quick retries, no lingering unless a spec asks for it. */
export const TEST_READER_SETTINGS: ReaderSettings = {
  maxDeliveries: 3,
  claimIdleMs: 5000,
  concurrency: 4,
  urgentReserve: 1,
  readCount: 64,
  blockMs: 100,
  lingerMs: 0,
  idleLingerMs: 0,
  retryBaseMs: 50,
  retryMaxMs: 200,
  maxHeld: 1000,
  laneBodies: 64,
};
