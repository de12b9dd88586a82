// Cache lifetimes shared by the built-in plugins.

/** Answers that cannot change any more (final heights, hash-addressed data). */
export const FINAL_TTL_MS = 3_600_000;
/** Default time between blocks when a chain's options do not say. */
export const DEFAULT_BLOCK_TIME_MS = 2_000;
