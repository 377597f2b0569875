/**
 * How long an isolate trusts a token it has seen valid (middleware/auth.ts caches it): a revocation
 * reaches other isolates within this, and the dispatcher remembers revoked tokens for a multiple of it.
 */
export const TOKEN_CACHE_MS = 10_000;
