import { DurableObject } from "cloudflare:workers";
import type { Bindings } from "../env.js";
import { openDb, type Db } from "../db/client.js";
import { ChainFiring } from "./chain-firing.js";
import type { DispatcherRpc, ShardStatus } from "./rpc.js";
import { ChainPlaces } from "../chains/places.js";
import { chainShards } from "../chains/shards.js";
import { WorkQueue, type NewWork } from "./queue.js";
import { BuildReports } from "./build-reports.js";
import { evictArtifacts } from "../limits/artifact-eviction.js";
import { GroupCommit } from "./group-commit.js";
import { AgentSockets } from "./agent-sockets.js";
import { AgentProtocol } from "./agent-protocol.js";
import { AlarmSchedule } from "./alarm-schedule.js";
import { WorkEndings } from "./work-endings.js";
import { Pump } from "./pump.js";
import { HeldReads } from "./held-reads.js";
import { log } from "./dispatcher-log.js";
import { LogFollows, type Followed } from "./log-follows.js";
import { followedResponse, liveLogRequest } from "./live-log-requests.js";
import { AssignedMarks } from "./assigned-marks.js";
import { Waiters } from "./waiters.js";
import { keepFinishedMs, RecentlyFinished } from "./recently-finished.js";
import { retentionMs } from "../tasks/retention-period.js";
import { recordFlushMs } from "../task-life/flush-gap.js";
import { OutcomeLog } from "./outcomes.js";
import type { TaskRow } from "../db/rows.js";
import { DispatcherStorage } from "../storage/dispatcher-store.js";
import { fleetOf, type FleetEntry, type NodeFlags } from "./fleet.js";
import { holds, RevokedTokens, type Access } from "./nodes.js";
import { Refusals } from "./refusals.js";
import type { Grant } from "./revoked-grants.js";
import { TaskConfigs, taskConfigOf } from "../function-config/task-configs.js";
import { Retries } from "../retries/retries.js";
import { ConcurrencyCaps } from "../concurrency/caps.js";
import type { FunctionPolicy } from "../retries/function-policy.js";
import { IdempotencyKeys, type KeyClaim } from "../idempotency/key-store.js";
import { HeldTasks } from "../task-life/held-tasks.js";
import type { OutcomeElement } from "../task-life/finished-row.js";
import { ShardLife } from "../task-life/shard-life.js";
import { heldCounts, heldIssued, type HeldCounts } from "../task-life/held-counts.js";
import { ShardMeters, type ShardMeterView } from "../shard-metering/shard-meters.js";
import type { TaskScope } from "../tasks/counts.js";
import type { CreateAnswer, CreateRequest } from "../task-life/create-types.js";
import { ShardAdmission } from "../shard-admission/leases.js";
import { admissionLimits } from "../tasks/admission.js";
import { FinishedRecords } from "../shard-history/finished-records.js";
import { ShardArchive } from "../shard-history/archive.js";
import { releaseFromD1 } from "../shard-history/release.js";
import type { ListedTask, ListQuery } from "../shard-history/list-query.js";
import { shardListPage } from "../shard-history/listed.js";
import type { ShardArchiveFinder } from "../task-life/archived-reads.js";
import { RecordCounts } from "../shard-history/record-counts.js";
import { distinctIssues, IssueCounts } from "../shard-history/issue-counts.js";
import { archiveAfterMs, WEEK_MS } from "../task-history/window.js";
import { startOfUtcDay } from "../lib/time.js";

/**
 * One dispatch shard: it owns a queue of builds and tasks and the WebSockets of the agents that
 * serve it (hibernation API), assigns work to agents that fit, and records outcomes in D1.
 */
export class Dispatcher extends DurableObject<Bindings> implements DispatcherRpc {
  private readonly queue: WorkQueue;
  private readonly outcomes: OutcomeLog;
  private readonly db: Db;
  private readonly waiters = new Waiters();
  private readonly finished: RecentlyFinished;
  /** Finished records kept in the shard for the window (step 1 of the shard-resident history). */
  readonly history: FinishedRecords;
  /** The shard's archive of its finished records in R2 (worker/shard-history/archive.ts). */
  readonly archive: ShardArchive;
  /** The week's issue times of the shard's functions and endpoints (step 3). */
  readonly issues: IssueCounts;
  private readonly recorded: RecordCounts;
  private readonly marks: AssignedMarks;
  private readonly revoked: RevokedTokens;
  private readonly chains: ChainFiring;
  private readonly places: ChainPlaces;
  private readonly storage: DispatcherStorage;
  private readonly follows: LogFollows;
  private readonly commits: GroupCommit;
  private readonly builds: BuildReports;
  private readonly refusals: Refusals;
  private readonly configs: TaskConfigs;
  private readonly retries: Retries;
  private readonly caps: ConcurrencyCaps;
  private readonly keys: IdempotencyKeys;
  private readonly heldRows: HeldTasks;
  private readonly life: ShardLife;
  /** Admission of this shard's new tasks (worker/shard-admission/). */
  readonly admission: ShardAdmission;
  /** What this shard meters of its tasks' outcomes (worker/shard-metering/). */
  private readonly meters: ShardMeters;
  private readonly sockets: AgentSockets;
  private readonly alarms: AlarmSchedule;
  private readonly endings: WorkEndings;
  private readonly pump: Pump;
  private readonly protocol: AgentProtocol;
  private readonly reads: HeldReads;

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    this.queue = new WorkQueue(ctx.storage.sql);
    this.outcomes = new OutcomeLog(ctx.storage.sql);
    this.revoked = new RevokedTokens(ctx.storage.sql);
    this.storage = new DispatcherStorage(ctx.storage.sql);
    this.db = openDb(env);
    this.admission = new ShardAdmission(ctx.storage.sql, this.db, ctx.id.toString(), () => admissionLimits(env));
    this.meters = new ShardMeters(ctx.storage.sql, ctx.id.toString());
    this.finished = new RecentlyFinished(keepFinishedMs(retentionMs(env)));
    // A rowless task has no row to mark (task-life/held-tasks.ts): its readers see the queue's assignment.
    this.marks = new AssignedMarks(this.db, (id) => !this.heldRows.rowless(id), (e) => log("error", "marking tasks assigned failed", { error: String(e) }));
    this.places = new ChainPlaces(ctx.storage.sql, this.db);
    this.chains = new ChainFiring(env, this.db, ctx.storage.sql, chainShards(env, { id: ctx.id, self: this }, this.places), (e, taskIds) => {
      log("error", "firing triggers failed; retrying", { taskIds, error: String(e) });
      void this.alarms.schedule();
    });
    this.follows = new LogFollows({
      follow: (nodeId, taskId, on) => this.sockets.follow(nodeId, taskId, on),
      running: (functionId) => this.queue.matching((w) => w.function_id === functionId && w.kind === "task" && w.node !== null),
      get: (taskId) => this.queue.get(taskId),
    });
    this.builds = new BuildReports(this.db, this.queue, (accountId, functionId) =>
      // Eviction failing must not fail the build's report: the next build's end evicts again.
      evictArtifacts(env, this.db, accountId, functionId)
        .then(
          () => undefined,
          (e) => log("error", "evicting old build artifacts failed", { functionId, error: String(e) }),
        )
        // What the function runs may have changed (a new build, an evicted one): admission reads it again.
        .finally(() => this.admission.buildEnded(functionId)),
    );
    this.refusals = new Refusals(this.db, ctx.storage.sql, {
      queue: this.queue, agents: () => this.sockets.agents(), log: (msg, extra) => log("warn", msg, extra),
      end: (w, report) => this.endings.stop(w, report),
    });
    this.configs = new TaskConfigs((functionId) => taskConfigOf(this.db, env.SECRETS_KEY, functionId));
    this.heldRows = new HeldTasks(ctx.storage.sql);
    // Never past the retention period: a record kept longer would outlive the purge of its payloads.
    this.history = new FinishedRecords(ctx.storage.sql, Math.min(archiveAfterMs(env), retentionMs(env)));
    this.archive = new ShardArchive(ctx.storage.sql, (fn) => ctx.storage.transactionSync(fn), env.BUCKET, ctx.id.toString(), this.history, retentionMs(env), (records) =>
      releaseFromD1(this.db, records, Date.now()),
    );
    const ownArchive: ShardArchiveFinder = (accountId, taskId) => this.ownRecord(taskId, accountId);
    this.issues = new IssueCounts(ctx.storage.sql, Date.now(), () =>
      distinctIssues(Array.from(this.heldRows.entries(), (e) => e.row), this.history.issues()),
    );
    this.recorded = new RecordCounts(ctx.storage.sql);
    const elements = new Map<string, Promise<OutcomeElement>>();
    this.commits = new GroupCommit({
      db: this.db, bucket: env.BUCKET, outcomes: this.outcomes, finished: this.finished, history: this.history, waiters: this.waiters, chains: this.chains,
      held: this.heldRows, elements, gapMs: recordFlushMs(env), admission: this.admission, meters: this.meters,
      onError: async (e) => {
        log("error", "recording outcomes failed; retrying", { error: String(e) });
        await this.alarms.schedule();
      },
    });
    this.retries = new Retries(env, this.db, ctx.storage.sql, { id: ctx.id, self: this }, {
      queue: this.queue, requeue: (work) => this.enqueue(work), log: (msg, extra) => log("warn", msg, extra),
      archive: ownArchive,
      created: (taskId) => this.heldRows.created(taskId),
    });
    this.caps = new ConcurrencyCaps(ctx.storage.sql);
    this.keys = new IdempotencyKeys(ctx.storage.sql);
    this.life = new ShardLife(env, this.db, {
      held: this.heldRows, admission: this.admission, elements, finished: this.finished, waiters: this.waiters,
      enqueue: (work, once) => this.enqueue(work, once),
      flush: () => this.commits.later(),
      logged: (taskId) => this.outcomes.get(taskId),
      issues: this.issues,
      archive: ownArchive,
      recorded: this.recorded,
    });
    this.sockets = new AgentSockets(ctx);
    this.alarms = new AlarmSchedule(ctx, { outcomes: this.outcomes, held: this.heldRows, chains: this.chains, queue: this.queue, retries: this.retries, archive: this.archive });
    const scheduleAlarm = () => this.alarms.schedule();
    this.endings = new WorkEndings({
      queue: this.queue, outcomes: this.outcomes, marks: this.marks, follows: this.follows, storage: this.storage, retries: this.retries, life: this.life,
      builds: this.builds, commits: this.commits, waiters: this.waiters, caps: this.caps, configs: this.configs, held: this.heldRows,
      sendTo: (nodeId, msg) => this.sockets.sendTo(nodeId, msg), scheduleAlarm,
    });
    this.pump = new Pump({
      sockets: this.sockets, queue: this.queue, caps: this.caps, configs: this.configs, storage: this.storage, held: this.heldRows, marks: this.marks,
      follows: this.follows, retries: this.retries, endings: this.endings, commits: this.commits, scheduleAlarm,
    });
    this.protocol = new AgentProtocol({
      ctx, db: () => this.db, revoked: this.revoked, sockets: this.sockets, queue: this.queue, refusals: this.refusals, follows: this.follows, builds: this.builds,
      endings: this.endings, pump: this.pump, commits: this.commits, retries: this.retries, outcomes: this.outcomes, scheduleAlarm,
    });
    this.reads = new HeldReads({
      queue: this.queue, outcomes: this.outcomes, held: this.heldRows, life: this.life, retries: this.retries, finished: this.finished, history: this.history, waiters: this.waiters, chains: this.chains,
    });
    // Finished tasks whose triggers had not fired when the last instance went.
    this.chains.reload();
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('{"type":"keepalive"}', '{"type":"keepalive"}'));
  }

  // ── RPC from the Worker ───────────────────────────────────────────────────────────────────────

  /** `once`: never retried nor dead-lettered (a synchronous call, a dead letter; worker/retries/). */
  async enqueue(work: NewWork[], once = false): Promise<void> {
    const now = Date.now();
    for (const w of work) this.queue.add(w, now);
    this.retries.track(work, once);
    const ids = work.map((w) => w.id);
    let ended = this.refusals.revokedWork(ids);
    // The pump assigns before its first await, storing what it assigns; the rest is stored here.
    const pumped = this.pump.run();
    this.queue.flush();
    await pumped;
    ended += await this.refusals.unreachable(ids);
    // The ended tasks' outcomes are durable here; their callers are answered without waiting for D1.
    if (ended) void this.commits.run();
  }

  /** The operator granted or revoked one of the account's grants (a revocation ends what needs it here). */
  async grantChanged(grant: Grant, accountId: string, allowed: boolean): Promise<void> {
    if (!this.refusals.grantChanged(grant, accountId, allowed)) return;
    await this.pump.run(); // the stopped tasks' slots are free
    await this.commits.run();
  }

  /** The hourly sweep: waiting tasks that no node seen in the last 24 hours could take fail now. */
  async sweepUnreachable(): Promise<number> {
    const ended = await this.refusals.sweep();
    if (ended) await this.commits.run();
    return ended;
  }

  /**
   * Queues a task and resolves with its finished row, or null after `ms`: a synchronous call
   * (`Prefer: wait`) in one RPC. The waiter is registered first, so no outcome can slip past it.
   */
  async enqueueAndAwait(work: NewWork[], taskId: string, ms: number): Promise<TaskRow | null> {
    const finished = this.waiters.wait(taskId, ms);
    await this.enqueue(work, true);
    return finished;
  }

  /**
   * Creates a task of one of this shard's functions (worker/task-life/): admitted, written to this
   * shard's storage and queued in one step, answered from here; D1 gets the row with a later batch.
   * With `waitMs`, resolves once the task finished (or the time ran out), as enqueueAndAwait does.
   */
  async createTask(req: CreateRequest, waitMs = 0): Promise<CreateAnswer> {
    return this.life.create(req, waitMs);
  }

  /** Places for tasks in a chain rooted here (worker/chains/places.ts). */
  async reserveChainPlaces(chainId: string, taskIds: string[], fresh: boolean): Promise<string[]> {
    return this.places.reserve(chainId, taskIds, fresh, Date.now());
  }

  async releaseChainPlaces(chainId: string, taskIds: string[]): Promise<void> {
    this.places.release(chainId, taskIds);
  }

  /** The shard's copy of a task it holds (newer than D1's, or not in D1 yet), or its kept record of one finished within the window; null when only D1 or the archive has it. */
  async heldTask(taskId: string): Promise<TaskRow | null> {
    return this.reads.task(taskId);
  }

  /** A page of the account's (or its function's) tasks here: held, kept and archived, newest first (shard-history/listed.ts). */
  async listed(q: ListQuery): Promise<ListedTask[]> {
    return shardListPage(q, () => this.reads.ofAccount(q), this.history, this.archive);
  }

  /** The account's task from this shard's archive in R2 (shard-history/archive.ts), or null; without an account, whoever's (the public result's look). */
  async archivedTask(taskId: string, accountId?: string): Promise<TaskRow | null> {
    return (await this.ownRecord(taskId, accountId)) ?? null;
  }

  /** A finished record past what the shard holds: kept whole (a rowless task's only one until its archive has it), else archived. */
  private async ownRecord(taskId: string, accountId?: string): Promise<TaskRow | undefined> {
    const kept = this.history.whole(taskId, Date.now());
    if (kept && (accountId === undefined || kept.accountId === accountId)) return kept;
    return this.archive.find(taskId, accountId);
  }

  /**
   * What this shard adds to D1's task counts of a scope (task-life/held-counts.ts). With
   * `countsFrom` (when the shards began to count the scope's issues), today's tasks issued since
   * then, and a function's or an endpoint's week's, are this shard's own count of them; the Worker
   * passes an account's only once its today begins there.
   */
  async heldCounts(scope: TaskScope, now: number, countsFrom?: number): Promise<HeldCounts> {
    const held = heldCounts(this.heldRows, (t) => this.outcomes.has(t), scope, now, countsFrom, this.recorded);
    if (countsFrom === undefined) return held;
    const id = scope.functionId ?? scope.endpointId;
    if (!id) return { ...held, today: held.today + this.issues.issuedInHoursSince(scope.accountId, Math.max(startOfUtcDay(now), countsFrom)) };
    const since = (start: number) => this.issues.issuedSince(id, Math.max(start, countsFrom));
    return { ...held, today: held.today + since(startOfUtcDay(now)), week: held.week + since(now - WEEK_MS) };
  }

  /** The account's rows D1 does not have yet, per function and day since `since` (the console's charts). */
  async heldIssued(accountId: string, since: number): Promise<{ functionId: string; day: number; count: number }[]> {
    return heldIssued(this.heldRows, accountId, since, this.recorded);
  }

  /** The account's `period` as this shard meters it: its sums D1 has, and those of the outcomes it has not sent yet. */
  async meteredHere(accountId: string, period: string): Promise<ShardMeterView> {
    return this.meters.view(accountId, period, this.outcomes.all(), (id) => this.heldRows.created(id));
  }

  /** Writes everything this shard holds for D1 now (tests, and an operator's drain): resolves when none is left or a write failed. */
  async flushRecords(): Promise<number> {
    for (let i = 0; i < 100 && (this.heldRows.waiting || this.outcomes.count()); i++) {
      const before = this.heldRows.waiting + this.outcomes.count();
      await this.commits.run();
      if (this.heldRows.waiting + this.outcomes.count() >= before) break;
    }
    return this.heldRows.waiting + this.outcomes.count();
  }

  /** An Idempotency-Key's call asks whether to issue its task (worker/idempotency/). */
  async claimIdempotencyKey(scope: string, key: string, fingerprint: string): Promise<KeyClaim> {
    return this.keys.claim(scope, key, fingerprint);
  }

  async settleIdempotencyKey(scope: string, key: string, claim: string, taskId: string | null): Promise<void> {
    this.keys.settle(scope, key, claim, taskId);
  }

  /**
   * A live follower of the account's queued or running task (api-decisions "Live logs"); null when
   * the task is not here (finished, or another account's): its log is read from D1 then.
   */
  async followTask(taskId: string, accountId: string): Promise<Followed | null> {
    const w = this.queue.get(taskId);
    return w && w.kind === "task" && w.account_id === accountId ? await this.follows.followTask(taskId, accountId) : null;
  }

  /** A live tail of the function's tasks; the caller checked that the function is the caller's. */
  async tailFunction(functionId: string, accountId: string): Promise<Followed> {
    return this.follows.tailFunction(functionId, accountId);
  }

  /** The owner cleared the function's storage: tasks assigned from now on get none. */
  async clearStorage(functionId: string): Promise<void> {
    this.storage.clear(functionId);
  }

  /** What admission caches of a function, or of an account's functions, changed (worker/shard-admission/notify.ts). */
  async admissionChanged(change: { functionId?: string; accountId?: string }): Promise<void> {
    this.admission.changed(change);
  }

  /** The function's variables or secrets changed: tasks assigned from now on carry the new ones. */
  async configChanged(functionId: string): Promise<void> {
    this.configs.changed(functionId);
  }

  /** The function's retry policy or concurrency cap changed: tasks queued from now on keep the new policy; the cap holds at once. */
  async policyChanged(functionId: string, p: FunctionPolicy): Promise<void> {
    this.retries.policies.set(functionId, p.retry);
    this.caps.set(functionId, p.concurrency);
    await this.pump.run();
  }

  async setPaused(functionId: string, paused: boolean): Promise<void> {
    this.queue.setPaused(functionId, paused);
    if (!paused) await this.pump.run();
  }

  /** The function was deleted: drop its queued work and stop what runs. */
  /** The function's tasks this shard holds (its deletion leaves their end to the shard, not D1's cancellation). */
  async heldOfFunction(functionId: string): Promise<string[]> {
    return this.heldRows.ofFunction(functionId);
  }

  async cancelFunction(functionId: string): Promise<void> {
    this.endings.functionGone(functionId);
  }

  /**
   * Resolves when the task is finished: at once with the shard's copy of a task finished here that
   * D1 has not recorded, else when its outcome is in D1, with the row that outcome wrote, so the
   * reader need not read it back; null when the task is not (or no longer) here, was cancelled, or
   * after `ms`. Result reads with ?wait park here instead of polling D1.
   */
  async awaitTask(taskId: string, ms: number): Promise<TaskRow | null> {
    return this.reads.awaitTask(taskId, ms);
  }

  /**
   * A result read's wait, found by task id alone (the id names its shard, see newTaskId): the
   * finished row; after `ms`, the progress of a task still queued or running; or null when the
   * task is not here (recorded earlier, another account's, or an id from before ids named
   * shards) and D1 must answer.
   */
  async awaitOwnTask(taskId: string, accountId: string, ms: number): Promise<{ row: TaskRow } | { progress: number } | null> {
    return this.reads.awaitOwnTask(taskId, accountId, ms);
  }

  /**
   * Reads the queue, the outcome log and the alarm from storage again, as a fresh instance does.
   * Memory mirrors storage (every write goes to both), so in operation this is never needed; tests
   * that edit storage directly, or stand in for an eviction, call it.
   */
  async resync(): Promise<void> {
    this.queue.reload();
    this.storage.reload();
    if (!this.commits.inFlight) {
      this.outcomes.reload();
      this.heldRows.reload();
      this.admission.reload();
      this.meters.reload();
    }
    this.chains.reload();
    this.refusals.reload();
    this.retries.reload();
    this.caps.reload();
    this.alarms.forget();
    await this.pump.run();
    await this.alarms.schedule();
  }

  /** Which of these tasks this shard holds: queued or running, its outcome logged, or planned by a firing. */
  async held(taskIds: string[]): Promise<string[]> {
    return this.reads.held(taskIds);
  }

  /** Whether the node holds this work (agent routes serve a node nothing else). */
  async holds(nodeId: string, access: Access): Promise<boolean> {
    return holds(this.queue, this.ctx.storage.sql, nodeId, access);
  }

  /** A revoked token's sockets close now, and its node's work goes back to the queue. */
  async closeToken(tokenId: string): Promise<void> {
    await this.protocol.closeToken(tokenId);
  }

  /** The operator drained, resumed or disabled a node: a disabled node's sockets close now and its work goes back. */
  async nodeChanged(nodeId: string, flags: NodeFlags): Promise<void> {
    await this.protocol.nodeChanged(nodeId, flags);
  }

  async fleet(): Promise<FleetEntry[]> {
    return fleetOf(this.sockets.connected().map((c) => c.ws), (nodeId) => this.queue.countAssignedTo(nodeId));
  }

  /**
   * The queue's counts and the connected agents; `nodeId` narrows the agents to that node's own
   * connection (an agent token sees no other node's).
   */
  async status(nodeId?: string): Promise<ShardStatus> {
    return { ...this.queue.counts(), recording: this.outcomes.count(), agents: this.sockets.agents().filter((a) => nodeId === undefined || a.nodeId === nodeId).map(({ nodeId, slots, privileged, egress, langs, rttMs, draining }) => ({ nodeId, slots, busy: this.queue.countAssignedTo(nodeId), privileged, egress, langs, rttMs, draining })) };
  }

  // ── WebSockets ────────────────────────────────────────────────────────────────────────────────

  override async fetch(request: Request): Promise<Response> {
    // Live logs stream through fetch rather than RPC: a reader that goes away cancels the stream here.
    const live = liveLogRequest(request);
    if (live) return followedResponse(live.kind === "task" ? await this.followTask(live.id, live.accountId) : await this.tailFunction(live.id, live.accountId));
    return this.protocol.connect(request);
  }

  override async webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    await this.protocol.message(ws, data);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    await this.protocol.closed(ws, code, reason);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.protocol.drop(ws);
  }

  override async alarm(): Promise<void> {
    this.alarms.fired();
    const now = Date.now();
    await this.protocol.checkLiveness(now);
    for (const w of this.queue.overdue(now)) await this.endings.expire(w, now);
    await this.retries.tick(now, (id) => this.outcomes.has(id));
    await this.pump.run();
    if (this.outcomes.count() || this.heldRows.waiting) await this.commits.run();
    await this.admission.refresh(now).catch((e) => log("warn", "refreshing admission leases failed", { error: String(e) }));
    if (this.chains.failed) this.chains.reload();
    await this.archive.run(now).catch((e) => log("error", "archiving finished records failed; retrying in a minute", { error: String(e) }));
    await this.alarms.schedule();
  }
}
