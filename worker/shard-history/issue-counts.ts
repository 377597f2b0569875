import { HOUR_MS } from "../lib/time.js";
import { WEEK_MS } from "../task-history/window.js";
import { stored } from "./id-bytes.js";

/** A task as its issue is counted: under its account and function, and its endpoint when it came through one. */
export interface Issue {
  accountId: string;
  functionId: string;
  endpointId?: string | null | undefined;
  issuedAt: number;
}

/** Each task of these once, by id: a task may be both held and kept for a moment (its record is kept as its held row goes). */
export function* distinctIssues(...sources: Iterable<Issue & { id: string }>[]): Generator<Issue> {
  const seen = new Set<string>();
  for (const source of sources)
    for (const issue of source) {
      if (seen.has(issue.id)) continue;
      seen.add(issue.id);
      yield issue;
    }
}

const SECOND_MS = 1_000;
/** Pruning runs at most this often, as the finished records' does. */
const PRUNE_EVERY_MS = 10_000;
/** Scope-hours one pruning drops (each with its seconds), so that a backlog never makes one storage step long. */
const PRUNE_HOURS = 500;
/** Scope numbers an instance keeps in memory. */
const SCOPES_CACHED = 10_000;

/**
 * A millisecond within its second (0–999) as two characters of a 32-letter alphabet: a second's
 * issues are then text that `||` appends to, and each costs two bytes.
 */
const encodeOffset = (ms: number) => String.fromCharCode(48 + (ms >> 5), 48 + (ms & 31));
const offsetAt = (text: string, i: number) => ((text.charCodeAt(i) - 48) << 5) | (text.charCodeAt(i + 1) - 48);

const ADD_TO_HOUR = "insert into shard_issue_hour (scope, hour, tasks) values (?, ?, ?) on conflict do update set tasks = tasks + excluded.tasks";
const ADD_TO_SECOND = "insert into shard_issue_second (scope, second, offsets) values (?, ?, ?) on conflict do update set offsets = offsets || excluded.offsets";

/** The scopes an issue counts under to the millisecond: its function, and its endpoint when it came through one. */
const scopesOf = (issue: Issue) => (issue.endpointId ? [issue.functionId, issue.endpointId] : [issue.functionId]);

/** Which scopes a count adds to: all (a shard's first count) or its account's hours alone (a shard that counted the rest already). */
type Kinds = "all" | "accounts";

/**
 * The week's issue times of a shard's functions and endpoints (step 3 of the shard-resident
 * history, docs/dispatch.md): what a function's and an endpoint's `todaysTasks` and `weekTasks`
 * count, kept where every task of the function is issued, so that D1 need not keep them.
 *
 * Exact to the millisecond at a cost that follows a scope's rate: an hour's count a row
 * (`shard_issue_hour`), read for whole hours, and each second's issues as two bytes a task
 * (`shard_issue_second`), read only for the one hour a count's start cuts. A week's count so reads
 * at most 169 hour rows and 3,600 second rows, however busy the function; a task adds to one row of
 * each, per scope, in the storage step that creates it.
 *
 * An account's issues are counted by the hour only: its one count, `todayTasks`, starts at a UTC
 * midnight, a whole hour (a row an hour and account; the day's hours are at most 24 rows).
 *
 * Counting starts when a shard first runs this code (`since`). Its finished records of the window
 * and the tasks it still holds are counted then too, so the counts also hold the tasks issued in the
 * window before that (but for the few the shard does not keep: note in docs/dispatch.md). A shard
 * that counted functions and endpoints before it counted accounts does the same for its accounts
 * alone, once (`shard_issue_accounts_since`).
 */
export class IssueCounts {
  private lastPrune = 0;
  private readonly scopes = new Map<string, number>();
  /** Since when every task the shard issues is counted under its function and endpoint. */
  readonly since: number;

  constructor(
    private readonly sql: SqlStorage,
    now: number,
    existing: () => Iterable<Issue>,
  ) {
    // A function's or an endpoint's id is a small number here (a byte or two in each key, not 19).
    sql.exec("create table if not exists shard_issue_scope (n integer primary key, id blob not null unique)");
    sql.exec(`create table if not exists shard_issue_hour (
      scope integer not null, hour integer not null, tasks integer not null, primary key (scope, hour)) without rowid`);
    // Pruning walks the hours oldest first; the table is a row a scope and hour, so this is small.
    sql.exec("create index if not exists shard_issue_hour_age on shard_issue_hour (hour)");
    sql.exec(`create table if not exists shard_issue_second (
      scope integer not null, second integer not null, offsets text not null, primary key (scope, second)) without rowid`);
    sql.exec("create table if not exists shard_issue_since (since integer not null)");
    sql.exec("create table if not exists shard_issue_accounts_since (since integer not null)");
    const since = (table: string) => sql.exec<{ since: number }>(`select since from ${table}`).toArray()[0]?.since;
    const [kept, accountsKept] = [since("shard_issue_since"), since("shard_issue_accounts_since")];
    if (kept === undefined || accountsKept === undefined) {
      this.addAll(existing(), now - WEEK_MS, kept === undefined ? "all" : "accounts");
      if (kept === undefined) sql.exec("insert into shard_issue_since (since) values (?)", now);
      sql.exec("insert into shard_issue_accounts_since (since) values (?)", now);
    }
    this.since = kept ?? now;
  }

  /** Counts a task's issue: called in the storage step that creates it, which also prunes now and then. */
  issued(issue: Issue, now: number): void {
    this.add(issue);
    this.prune(now);
  }

  private add(issue: Issue): void {
    const hour = Math.floor(issue.issuedAt / HOUR_MS);
    const second = Math.floor(issue.issuedAt / SECOND_MS);
    const offset = encodeOffset(issue.issuedAt % SECOND_MS);
    for (const id of scopesOf(issue)) {
      const scope = this.scopeOf(id, true)!;
      this.sql.exec(ADD_TO_HOUR, scope, hour, 1);
      this.sql.exec(ADD_TO_SECOND, scope, second, offset);
    }
    this.sql.exec(ADD_TO_HOUR, this.scopeOf(issue.accountId, true)!, hour, 1);
  }

  /**
   * Issues at `from` or later, added up first: a shard's first count (up to an hour of a busy
   * shard's tasks, in its constructor) writes a row an hour and a second, not two a task.
   */
  private addAll(issues: Iterable<Issue>, from: number, kinds: Kinds): void {
    const hours = new Map<string, [scope: number, hour: number, tasks: number]>();
    const seconds = new Map<string, [scope: number, second: number, offsets: string]>();
    for (const issue of issues) {
      if (issue.issuedAt < from) continue;
      const hour = Math.floor(issue.issuedAt / HOUR_MS);
      const second = Math.floor(issue.issuedAt / SECOND_MS);
      const addHour = (scope: number) => {
        const h = hours.get(`${scope} ${hour}`) ?? [scope, hour, 0];
        h[2]++;
        hours.set(`${scope} ${hour}`, h);
      };
      addHour(this.scopeOf(issue.accountId, true)!);
      if (kinds === "accounts") continue;
      for (const id of scopesOf(issue)) {
        const scope = this.scopeOf(id, true)!;
        addHour(scope);
        const s = seconds.get(`${scope} ${second}`) ?? [scope, second, ""];
        s[2] += encodeOffset(issue.issuedAt % SECOND_MS);
        seconds.set(`${scope} ${second}`, s);
      }
    }
    for (const h of hours.values()) this.sql.exec(ADD_TO_HOUR, ...h);
    for (const s of seconds.values()) this.sql.exec(ADD_TO_SECOND, ...s);
  }

  /**
   * Tasks of a function or an endpoint issued at `from` or later, for `from` within the last week:
   * the hours from the one `from` falls in, less that hour's tasks before `from` (its seconds before
   * `from`'s, and the issues of `from`'s own second before its millisecond).
   */
  issuedSince(scopeId: string, from: number): number {
    const scope = this.scopeOf(scopeId, false);
    if (scope === undefined) return 0;
    const hour = Math.floor(from / HOUR_MS);
    const second = Math.floor(from / SECOND_MS);
    const hours = this.sql.exec<{ n: number | null }>("select sum(tasks) as n from shard_issue_hour where scope = ? and hour >= ?", scope, hour).one().n ?? 0;
    const before = this.sql
      .exec<{ n: number | null }>(
        "select sum(length(offsets)) / 2 as n from shard_issue_second where scope = ? and second >= ? and second < ?",
        scope,
        (hour * HOUR_MS) / SECOND_MS,
        second,
      )
      .one().n ?? 0;
    let cut = 0;
    const [own] = this.sql.exec<{ offsets: string }>("select offsets from shard_issue_second where scope = ? and second = ?", scope, second).toArray();
    const ms = from % SECOND_MS;
    if (own) for (let i = 0; i < own.offsets.length; i += 2) if (offsetAt(own.offsets, i) < ms) cut++;
    return hours - before - cut;
  }

  /** An account's tasks issued at `from` or later, for `from` a whole hour within the last week (a UTC day's start). */
  issuedInHoursSince(accountId: string, from: number): number {
    if (from % HOUR_MS) throw new Error("an account's issues are counted from a whole hour");
    const scope = this.scopeOf(accountId, false);
    if (scope === undefined) return 0;
    return this.sql.exec<{ n: number | null }>("select sum(tasks) as n from shard_issue_hour where scope = ? and hour >= ?", scope, from / HOUR_MS).one().n ?? 0;
  }

  /** A scope's number, looked up once an instance (and made on its first issue). */
  private scopeOf(id: string, add: boolean): number | undefined {
    let n = this.scopes.get(id);
    if (n !== undefined) return n;
    const key = stored(id);
    n = this.sql.exec<{ n: number }>("select n from shard_issue_scope where id = ?", key).toArray()[0]?.n;
    if (n === undefined && add) n = this.sql.exec<{ n: number }>("insert into shard_issue_scope (id) values (?) returning n", key).one().n;
    if (n === undefined) return undefined;
    // Bounded: a shard of very many functions and endpoints looks the rest up again.
    if (this.scopes.size >= SCOPES_CACHED) this.scopes.clear();
    this.scopes.set(id, n);
    return n;
  }

  /** Drops hours wholly past the week, with their seconds, oldest first, at most every 10 seconds. */
  prune(now: number, force = false): number {
    if (!force && now - this.lastPrune < PRUNE_EVERY_MS) return 0;
    this.lastPrune = now;
    const past = Math.floor((now - WEEK_MS) / HOUR_MS);
    const due = this.sql.exec<{ scope: number; hour: number }>(
      `select scope, hour from shard_issue_hour where hour < ? order by hour limit ${PRUNE_HOURS}`,
      past,
    ).toArray();
    for (const { scope, hour } of due) {
      const first = (hour * HOUR_MS) / SECOND_MS;
      this.sql.exec("delete from shard_issue_second where scope = ? and second >= ? and second < ?", scope, first, first + HOUR_MS / SECOND_MS);
      this.sql.exec("delete from shard_issue_hour where scope = ? and hour = ?", scope, hour);
    }
    return due.length;
  }
}
