import { sql, type SQL } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import type { Plan } from "../billing/plans.js";
import { planInvocations } from "../tasks/admission.js";

/**
 * The D1 side of admission leases (tables invocation_leases and slot_leases, worker/db/schema.ts).
 * Every value the shard sends is absolute (what it has taken, settled, returned, wants to hold), and
 * every write takes the max of it and what D1 has: a write retried after D1 committed it but its
 * answer was lost changes nothing the second time. Rows are inserted from the account's own row, so
 * an account deleted meanwhile gets no lease rather than a failing foreign key.
 */

/** What one shard tells D1 of one account when it asks for more (or gives back). */
export interface LeaseAsk {
  accountId: string;
  period: string;
  shard: string;
  /** Invocations to add to the lease, if the plan has room (0: none wanted). */
  ask: number;
  /** Tasks the shard admitted in `period` plus invocations it gave back: `granted` is raised to it first (borrowed ones count whatever the limit). */
  floor: number;
  /** Invocations the shard gave back, absolute. */
  returned: number;
  /** Unfinished tasks the shard holds: its slots never go below them. */
  unfinished: number;
  /** Slots the shard wants to hold in all (more: a refill; fewer: slots given back). */
  wantSlots: number;
}

/** D1's answer to an ask: the shard's lease as D1 now has it, and the account's state across shards. */
export interface LeaseAnswer {
  granted: number;
  held: number;
  /** usage_totals' invocations of the period. */
  used: number;
  /** Every shard's granted - settled - returned (invocations leased and not yet settled). */
  outstanding: number;
  /** The plan's invocations, as D1's accounts.plan says. */
  limit: number;
  /** Every shard's slots together. */
  slotsHeld: number;
}

const plansLimit = (plans: Plan[], accountId: string) => planInvocations(plans, sql`(select a.plan from accounts a where a.id = ${accountId})`);
const usedOf = (accountId: string, period: string) =>
  sql`coalesce((select u.invocations from usage_totals u where u.account_id = ${accountId} and u.period = ${period}), 0)`;
const outstandingOf = (accountId: string, period: string) =>
  sql`(select coalesce(sum(l.granted - l.settled - l.returned), 0) from invocation_leases l where l.account_id = ${accountId} and l.period = ${period})`;
/**
 * The shard's floors for (account, period, shard): granted at least what it took (and gave back),
 * settled and returned at least what it says. Shared by asks and by settlement.
 */
export function leaseFloors(accountId: string, period: string, shard: string, floor: number, settled: number, returned: number): SQL {
  return sql`insert into invocation_leases (account_id, period, shard, granted, settled, returned)
    select a.id, ${period}, ${shard}, ${floor}, ${settled}, ${returned} from accounts a where a.id = ${accountId}
    on conflict (account_id, period, shard) do update set
      granted = max(invocation_leases.granted, excluded.granted),
      settled = max(invocation_leases.settled, excluded.settled),
      returned = max(invocation_leases.returned, excluded.returned)`;
}

/** An ask as statements for one batch; the last one reads the answer. */
function askStatements(a: LeaseAsk, plans: Plan[], maxPending: number): SQL[] {
  const { accountId: id, period, shard } = a;
  const room = sql`${plansLimit(plans, id)} - ${usedOf(id, period)} - ${outstandingOf(id, period)}`;
  return [
    leaseFloors(id, period, shard, a.floor, 0, a.returned),
    // The subqueries read the table as it was before this row's update: the plan and the cap hold
    // under any number of shards asking at once, as D1 runs one statement at a time.
    sql`update invocation_leases set granted = granted + max(0, min(${a.ask}, ${room}))
      where account_id = ${id} and period = ${period} and shard = ${shard}`,
    sql`insert into slot_leases (account_id, shard, held)
      select a.id, ${shard}, max(${a.unfinished}, min(${a.wantSlots}, ${maxPending} - (select coalesce(sum(s.held), 0) from slot_leases s where s.account_id = ${id} and s.shard <> ${shard})))
        from accounts a where a.id = ${id}
      on conflict (account_id, shard) do update set held = excluded.held`,
    sql`select
      coalesce((select l.granted from invocation_leases l where l.account_id = ${id} and l.period = ${period} and l.shard = ${shard}), 0) as granted,
      coalesce((select s.held from slot_leases s where s.account_id = ${id} and s.shard = ${shard}), 0) as held,
      ${usedOf(id, period)} as used,
      ${outstandingOf(id, period)} as outstanding,
      ${plansLimit(plans, id)} as lim,
      (select coalesce(sum(s.held), 0) from slot_leases s where s.account_id = ${id}) as slots_held`,
  ];
}

/** Asks for several accounts in one D1 batch (atomic: every ask is granted, or none). */
export async function askLeases(db: Db, asks: LeaseAsk[], plans: Plan[], maxPending: number): Promise<LeaseAnswer[]> {
  const per = asks.map((a) => askStatements(a, plans, maxPending));
  const results = await sqlBatch(db, per.flat());
  return asks.map((_, i) => {
    const r = results[(i + 1) * 4 - 1]![0] as Record<string, number>;
    return { granted: r.granted!, held: r.held!, used: r.used!, outstanding: r.outstanding!, limit: r.lim!, slotsHeld: r.slots_held! };
  });
}
