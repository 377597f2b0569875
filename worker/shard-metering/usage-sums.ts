/** What metering adds up, per account and billing period (usage_totals' columns). */
export interface UsageSums {
  invocations: number;
  durationMs: number;
  /** Sum of duration × billed memory (MiB·ms), for GB-seconds. */
  mibMs: number;
}

export const NO_USAGE: UsageSums = { invocations: 0, durationMs: 0, mibMs: 0 };

export const plus = (a: UsageSums, b: UsageSums): UsageSums => ({
  invocations: a.invocations + b.invocations,
  durationMs: a.durationMs + b.durationMs,
  mibMs: a.mibMs + b.mibMs,
});

/** Each sum of `a` past `b`'s, or 0: what a shard holds beyond what D1 already has of it. */
export const beyond = (a: UsageSums, b: UsageSums): UsageSums => ({
  invocations: Math.max(0, a.invocations - b.invocations),
  durationMs: Math.max(0, a.durationMs - b.durationMs),
  mibMs: Math.max(0, a.mibMs - b.mibMs),
});
