/**
 * The D1 queries an invocation may still make. D1 answers at most 1,000 queries a Worker
 * invocation on Workers Paid (50 on Free), and past that every query fails, so the hourly sweep's
 * parts draw from one budget and stop where it ends; the next run goes on from there. A batch is
 * counted as one query, as D1 counts it.
 */
export class QueryBudget {
  private spent = 0;

  constructor(
    private readonly cap: number,
    private readonly parent?: QueryBudget,
  ) {}

  /** Takes `n` queries, all or none: a step that needs two (a read, then its write) asks for both before the first. */
  take(n = 1): boolean {
    if (this.left() < n) return false;
    this.spend(n);
    return true;
  }

  left(): number {
    return Math.max(0, Math.min(this.cap - this.spent, this.parent ? this.parent.left() : Infinity));
  }

  /** A part's budget: at most `cap` of what is left here, spent from here. */
  part(cap: number): QueryBudget {
    return new QueryBudget(cap, this);
  }

  private spend(n: number): void {
    this.spent += n;
    this.parent?.spend(n);
  }
}
