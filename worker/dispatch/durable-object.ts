import { DurableObject } from "cloudflare:workers";
import type { Bindings } from "../env.js";
import { openDb, type Db } from "../db/client.js";
import { ackFor, agentMessage, FRAME_BUDGET_BYTES, hello as helloSchema, parseFrame, type AgentMessage, type DispatcherMessage } from "../../shared/protocol/messages.js";
import { MAX_WARM_REMEMBERED, pickAgent, type AgentState, type Attachment } from "./agents.js";
import { ChainFiring } from "./chain-firing.js";
import type { DispatcherRpc, ShardStatus } from "./rpc.js";
import { ChainPlaces } from "../chains/places.js";
import { chainShards } from "../chains/shards.js";
import { WorkQueue, type NewWork, type WorkRow } from "./queue.js";
import { BuildReports } from "./build-reports.js";
import { evictArtifacts } from "../limits/artifact-eviction.js";
import { GroupCommit } from "./group-commit.js";
import { LogFollows, type Followed } from "./log-follows.js";
import { followedResponse, liveLogRequest } from "./live-log-requests.js";
import { AssignedMarks } from "./assigned-marks.js";
import { BuildLimits } from "./build-limits.js";
import { Waiters } from "./waiters.js";
import { keepFinishedMs, RecentlyFinished } from "./recently-finished.js";
import { retentionMs } from "../tasks/retention-period.js";
import { recordFlushMs } from "../task-life/flush-gap.js";
import { OutcomeLog, type Outcome, type TaskDone } from "./outcomes.js";
import { abandonedReason, abandonedReport } from "./attempts.js";
import { verdictReport } from "./verdicts.js";
import type { TaskRow } from "../db/rows.js";
import { DispatcherStorage, withStorage } from "../storage/dispatcher-store.js";
import { agentPaths } from "./work.js";
import { fleetOf, nodeLeft, setDraining, type FleetEntry, type NodeFlags } from "./fleet.js";
import { admitHello, boundSockets, boundTo, CLOSE, connectRefused, DISABLED, holds, reportsOwnWork, REVOKED, RevokedTokens, shardOfConnect, type Access } from "./nodes.js";
import { slotShare } from "../../shared/protocol/slot-shares.js";
import { Refusals } from "./refusals.js";
import type { Grant } from "./revoked-grants.js";
import type { z } from "zod";
import { TaskConfigs, taskConfigOf } from "../function-config/task-configs.js";
import { ConfiguredAssignments } from "./configured-assignments.js";
import { Retries } from "../retries/retries.js";
import { ConcurrencyCaps } from "../concurrency/caps.js";
import type { FunctionPolicy } from "../retries/function-policy.js";
import { IdempotencyKeys, type KeyClaim } from "../idempotency/key-store.js";
import { HeldTasks } from "../task-life/held-tasks.js";
import type { OutcomeElement } from "../task-life/finished-row.js";
import { ShardLife } from "../task-life/shard-life.js";
import { heldCounts, heldIssued, heldMeters, type HeldCounts, type HeldMeter } from "../task-life/held-counts.js";
import type { TaskScope } from "../tasks/counts.js";
import type { CreateAnswer, CreateRequest } from "../task-life/create-types.js";
import { ShardAdmission } from "../shard-admission/leases.js";
import { admissionLimits } from "../tasks/admission.js";

/** Agents heartbeat this often; one silent for SILENT_AFTER_MS loses its work to the queue. */
export const HEARTBEAT_MS = 5_000;
const SILENT_AFTER_MS = 3 * HEARTBEAT_MS;
const HELLO_WITHIN_MS = 10_000;
/** Past a task's own timeout, how long the dispatcher waits for the agent's 504 before giving its own. */
const TASK_GRACE_MS = 30_000;
/** After a failed D1 write, outcomes are retried this much later (by the alarm). */
const RETRY_MS = 1_000;

type Hello = z.infer<typeof helloSchema>;
const log = (level: "info" | "warn" | "error", msg: string, extra: Record<string, unknown> = {}) =>
  console[level === "info" ? "log" : level](JSON.stringify({ level, component: "dispatcher", msg, ...extra }));

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
  private readonly marks: AssignedMarks;
  private readonly revoked: RevokedTokens;
  private readonly chains: ChainFiring;
  private readonly places: ChainPlaces;
  private readonly storage: DispatcherStorage;
  private readonly follows: LogFollows;
  private readonly commits: GroupCommit;
  private readonly builds: BuildReports;
  private readonly refusals: Refusals;
  private readonly assignments: ConfiguredAssignments;
  private readonly retries: Retries;
  private readonly caps: ConcurrencyCaps;
  private readonly keys: IdempotencyKeys;
  private readonly heldRows: HeldTasks;
  private readonly life: ShardLife;
  /** Admission of this shard's new tasks (worker/shard-admission/). */
  readonly admission: ShardAdmission;
  /** The alarm time this instance set (undefined until read from storage). */
  private alarmAt: number | null | undefined;

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    this.queue = new WorkQueue(ctx.storage.sql);
    this.outcomes = new OutcomeLog(ctx.storage.sql);
    this.revoked = new RevokedTokens(ctx.storage.sql);
    this.storage = new DispatcherStorage(ctx.storage.sql);
    this.db = openDb(env);
    this.admission = new ShardAdmission(ctx.storage.sql, this.db, ctx.id.toString(), () => admissionLimits(env));
    this.finished = new RecentlyFinished(keepFinishedMs(retentionMs(env)));
    this.marks = new AssignedMarks(this.db, (e) => log("error", "marking tasks assigned failed", { error: String(e) }));
    this.places = new ChainPlaces(ctx.storage.sql, this.db);
    this.chains = new ChainFiring(env, this.db, ctx.storage.sql, chainShards(env, { id: ctx.id, self: this }, this.places), (e, taskIds) => {
      log("error", "firing triggers failed; retrying", { taskIds, error: String(e) });
      void this.scheduleAlarm();
    });
    this.follows = new LogFollows({
      follow: (nodeId, taskId, on) => {
        for (const ws of this.sockets(nodeId)) if ((ws.deserializeAttachment() as AgentState).liveLogs) this.send(ws, { type: "task.follow", taskId, on });
      },
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
      queue: this.queue, agents: () => this.agents(), log: (msg, extra) => log("warn", msg, extra),
      end: (w, report) => {
        if (w.node) this.sendTo(w.node, { type: "task.cancel", taskId: w.id });
        this.accept(w, report, Date.now(), 0);
      },
    });
    this.assignments = new ConfiguredAssignments(new TaskConfigs((functionId) => taskConfigOf(this.db, env.SECRETS_KEY, functionId)), {
      stillAssigned: (taskId, nodeId, at) => {
        const w = this.queue.get(taskId);
        return w?.node === nodeId && w.assigned_at === at;
      },
      send: (nodeId, frame) => {
        for (const ws of this.sockets(nodeId)) this.sendRaw(ws, frame);
      },
      sent: (w, nodeId) => this.follows.assigned(w, nodeId, this.retries.runs.get(w.id)?.attempt),
      // Rather than run the function without the variables it expects, the task fails with the reason.
      fail: (w, reason) => {
        log("error", "a task's configuration could not go with it; the task fails", { taskId: w.id, reason });
        this.accept(w, verdictReport(w.id, 500, "config_unavailable", `the task did not run: ${reason}`), Date.now(), 0);
        void this.commits.run();
      },
      later: (w) => {
        log("warn", "a task's configuration could not be read (D1 unreachable); the task waits", { taskId: w.id });
        this.queue.handBack(w.id);
        void this.scheduleAlarm();
      },
    });
    this.heldRows = new HeldTasks(ctx.storage.sql);
    const elements = new Map<string, Promise<OutcomeElement>>();
    this.commits = new GroupCommit({
      db: this.db, bucket: env.BUCKET, outcomes: this.outcomes, finished: this.finished, waiters: this.waiters, chains: this.chains,
      held: this.heldRows, elements, gapMs: recordFlushMs(env), admission: this.admission,
      onError: async (e) => {
        log("error", "recording outcomes failed; retrying", { error: String(e) });
        await this.scheduleAlarm();
      },
    });
    this.retries = new Retries(env, this.db, ctx.storage.sql, { id: ctx.id, self: this }, {
      queue: this.queue, requeue: (work) => this.enqueue(work), log: (msg, extra) => log("warn", msg, extra),
      recordRows: (taskIds) => this.life.recordRows(taskIds),
    });
    this.caps = new ConcurrencyCaps(ctx.storage.sql);
    this.keys = new IdempotencyKeys(ctx.storage.sql);
    this.life = new ShardLife(env, this.db, {
      held: this.heldRows, admission: this.admission, elements, finished: this.finished, waiters: this.waiters,
      enqueue: (work, once) => this.enqueue(work, once),
      flush: () => this.commits.later(),
      logged: (taskId) => this.outcomes.get(taskId),
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
    const pumped = this.pump();
    this.queue.flush();
    await pumped;
    ended += await this.refusals.unreachable(ids);
    // The ended tasks' outcomes are durable here; their callers are answered without waiting for D1.
    if (ended) void this.commits.run();
  }

  /** The operator granted or revoked one of the account's grants (a revocation ends what needs it here). */
  async grantChanged(grant: Grant, accountId: string, allowed: boolean): Promise<void> {
    if (!this.refusals.grantChanged(grant, accountId, allowed)) return;
    await this.pump(); // the stopped tasks' slots are free
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

  /** The shard's copy of a task it holds (newer than D1's, or not in D1 yet); null when D1 has the final record. */
  async heldTask(taskId: string): Promise<TaskRow | null> {
    const row = await this.life.current(taskId);
    return row ? this.withAssignment(row) : null;
  }

  /** The account's tasks held here, newest first: what lists merge with D1's page. */
  async heldTasks(q: { accountId: string; functionId?: string | undefined; before?: string | undefined; limit: number }): Promise<TaskRow[]> {
    // A row the commit recorded meanwhile is left to D1, which the list reads after the shards.
    const rows = await Promise.all(this.heldRows.ofAccount(q).map((r) => this.life.current(r.id)));
    return rows.flatMap((r) => (r ? [this.withAssignment(r)] : []));
  }

  /** What this shard adds to D1's task counts of a scope (task-life/held-counts.ts). */
  async heldCounts(scope: TaskScope, now: number): Promise<HeldCounts> {
    return heldCounts(this.heldRows, (id) => this.outcomes.has(id), scope, now);
  }

  /** The account's rows D1 does not have yet, per function and day since `since` (the console's charts). */
  async heldIssued(accountId: string, since: number): Promise<{ functionId: string; day: number; count: number }[]> {
    return heldIssued(this.heldRows, accountId, since);
  }

  /** The account's accepted outcomes of `period` that usage meters once D1 records them. */
  async heldMeters(accountId: string, period: string): Promise<HeldMeter[]> {
    return heldMeters(this.heldRows, this.outcomes.all(), accountId, period);
  }

  /** A task created here that finished here (its outcome accepted, or cancelled) and D1 has not recorded: readers need not wait for D1. */
  private async finishedHere(taskId: string): Promise<TaskRow | undefined> {
    const row = await this.life.current(taskId);
    return row?.finishedAt != null ? row : undefined;
  }

  /** A held row as the queue knows it now: running on its node (D1 gets that mark later, or never). */
  private withAssignment(row: TaskRow): TaskRow {
    if (row.finishedAt != null) return row;
    const run = this.retries.runs.get(row.id);
    // Failed attempts another follows count as D1 records them (retries/attempt-records.ts).
    const r = run && run.attempt > 1 ? { ...row, attempts: Math.max(row.attempts, run.attempt - 1) } : row;
    const w = this.queue.get(row.id);
    return w?.node ? { ...r, node: w.node, assignedAt: w.assigned_at, progress: Math.max(r.progress, 1) } : r;
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
    this.assignments.configs.changed(functionId);
  }

  /** The function's retry policy or concurrency cap changed: tasks queued from now on keep the new policy; the cap holds at once. */
  async policyChanged(functionId: string, p: FunctionPolicy): Promise<void> {
    this.retries.policies.set(functionId, p.retry);
    this.caps.set(functionId, p.concurrency);
    await this.pump();
  }

  async setPaused(functionId: string, paused: boolean): Promise<void> {
    this.queue.setPaused(functionId, paused);
    if (!paused) await this.pump();
  }

  /** The function was deleted: drop its queued work and stop what runs. */
  async cancelFunction(functionId: string): Promise<void> {
    this.storage.clear(functionId);
    this.assignments.configs.changed(functionId);
    const removed = this.queue.removeFunction(functionId);
    this.follows.functionGone(functionId, removed.map((w) => w.id));
    const dropped = this.retries.dropFunction(functionId);
    this.life.cancel([...removed.map((w) => w.id), ...dropped], Date.now());
    for (const w of removed) {
      this.marks.take(w.id);
      this.waiters.wake(w.id, null);
      if (w.node && w.kind === "task") this.sendTo(w.node, { type: "task.cancel", taskId: w.id });
    }
    for (const id of dropped) this.waiters.wake(id, null);
    this.retries.policies.set(functionId, null);
    this.caps.set(functionId, null);
    if (this.heldRows.waiting) void this.commits.run();
  }

  /**
   * Resolves when the task is finished: at once with the shard's copy of a task finished here that
   * D1 has not recorded, else when its outcome is in D1, with the row that outcome wrote, so the
   * reader need not read it back; null when the task is not (or no longer) here, was cancelled, or
   * after `ms`. Result reads with ?wait park here instead of polling D1.
   */
  async awaitTask(taskId: string, ms: number): Promise<TaskRow | null> {
    const here = await this.finishedHere(taskId);
    if (here) return here;
    if (!this.queue.has(taskId) && !this.outcomes.has(taskId) && !this.retries.waiting(taskId)) return this.finished.get(taskId, Date.now()) ?? null;
    return this.waiters.wait(taskId, ms);
  }

  /**
   * A result read's wait, found by task id alone (the id names its shard, see newTaskId): the
   * finished row; after `ms`, the progress of a task still queued or running; or null when the
   * task is not here (recorded earlier, another account's, or an id from before ids named
   * shards) and D1 must answer.
   */
  async awaitOwnTask(taskId: string, accountId: string, ms: number): Promise<{ row: TaskRow } | { progress: number } | null> {
    // Finished here, its outcome maybe not yet in D1 (a lag, an outage): the shard's copy is the
    // answer, as for a read without ?wait; waiting for D1 would hold the reader for the whole wait.
    const recent = this.finished.get(taskId, Date.now()) ?? (await this.finishedHere(taskId));
    if (recent) return recent.accountId === accountId ? { row: recent } : null;
    const owner = this.queue.get(taskId)?.account_id ?? this.outcomes.accountOf(taskId) ?? this.retries.runs.get(taskId)?.accountId;
    if (owner !== accountId) return null;
    const row = await this.awaitTask(taskId, ms);
    if (row) return { row };
    const w = this.queue.get(taskId);
    return w ? { progress: w.node ? 1 : 0 } : this.retries.waiting(taskId) ? { progress: 0 } : null;
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
    }
    this.chains.reload();
    this.refusals.reload();
    this.retries.reload();
    this.caps.reload();
    this.alarmAt = undefined;
    await this.pump();
    await this.scheduleAlarm();
  }

  /** Which of these tasks this shard holds: queued or running, its outcome logged, or planned by a firing. */
  async held(taskIds: string[]): Promise<string[]> {
    const planned = this.chains.planned();
    for (const id of this.retries.letters.planned()) planned.add(id);
    return taskIds.filter((id) => this.queue.has(id) || this.outcomes.has(id) || planned.has(id) || this.retries.waiting(id));
  }

  /** Whether the node holds this work (agent routes serve a node nothing else). */
  async holds(nodeId: string, access: Access): Promise<boolean> {
    return holds(this.queue, this.ctx.storage.sql, nodeId, access);
  }

  /** A revoked token's sockets close now, and its node's work goes back to the queue. */
  async closeToken(tokenId: string): Promise<void> {
    this.revoked.add(tokenId, Date.now());
    for (const ws of boundSockets(this.ctx.getWebSockets(), (b) => b.tokenId === tokenId)) await this.refuse(ws, CLOSE.revoked, REVOKED);
  }

  /** The operator drained, resumed or disabled a node: a disabled node's sockets close now and its work goes back. */
  async nodeChanged(nodeId: string, flags: NodeFlags): Promise<void> {
    for (const ws of boundSockets(this.ctx.getWebSockets(), (b) => b.nodeId === nodeId)) {
      const att = ws.deserializeAttachment() as Attachment;
      if (flags.disabled) await this.refuse(ws, CLOSE.disabled, DISABLED);
      else if (att.hello) ws.serializeAttachment(setDraining(att, { operator: flags.draining }));
    }
    await this.pump();
  }

  async fleet(): Promise<FleetEntry[]> {
    return fleetOf(this.connected().map((c) => c.ws), (nodeId) => this.queue.countAssignedTo(nodeId));
  }

  /**
   * The queue's counts and the connected agents; `nodeId` narrows the agents to that node's own
   * connection (an agent token sees no other node's).
   */
  async status(nodeId?: string): Promise<ShardStatus> {
    return { ...this.queue.counts(), recording: this.outcomes.count(), agents: this.agents().filter((a) => nodeId === undefined || a.nodeId === nodeId).map(({ nodeId, slots, privileged, egress, langs, rttMs, draining }) => ({ nodeId, slots, busy: this.queue.countAssignedTo(nodeId), privileged, egress, langs, rttMs, draining })) };
  }

  // ── WebSockets ────────────────────────────────────────────────────────────────────────────────

  override async fetch(request: Request): Promise<Response> {
    // Live logs stream through fetch rather than RPC: a reader that goes away cancels the stream here.
    const live = liveLogRequest(request);
    if (live) return followedResponse(live.kind === "task" ? await this.followTask(live.id, live.accountId) : await this.tailFunction(live.id, live.accountId));
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return new Response("expected a WebSocket upgrade", { status: 426 });
    const bound = boundTo(request);
    if (!bound || this.revoked.has(bound.tokenId)) return connectRefused();
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    server.serializeAttachment({ hello: false, connectedAt: Date.now(), bound, place: shardOfConnect(request) } satisfies Attachment);
    await this.scheduleAlarm();
    return new Response(null, { status: 101, webSocket: client });
  }

  override async webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    // An agent keeps every frame within the budget (a larger body or log goes by HTTP): one over
    // it is not parsed at all, whatever it says (its length in UTF-16 units is at most its bytes).
    if (typeof data === "string" && data.length > FRAME_BUDGET_BYTES) {
      log("warn", "frame over budget dropped", { chars: data.length });
      return;
    }
    const msg = parseFrame(agentMessage, data);
    if (!msg) {
      log("warn", "unparseable frame dropped", { frame: typeof data === "string" ? data.slice(0, 200) : "binary" });
      return;
    }
    const att = ws.deserializeAttachment() as Attachment;
    if (msg.type === "hello") return this.onHello(ws, att, msg);
    if (!att.hello) return; // nothing but hello counts before hello
    const now = Date.now();
    att.lastSeen = now;
    if (msg.type === "pong") att.rttMs = Math.max(0, now - msg.t);
    if (msg.type === "heartbeat") {
      att.warm = [...new Set(msg.warm.map((w) => w.functionId))].slice(0, MAX_WARM_REMEMBERED);
      setDraining(att, { agent: msg.draining });
    }
    ws.serializeAttachment(att);
    // Reports count only from the node the work is assigned to; another's (or one whose work is
    // gone: a duplicate, a late report) is moot, and acknowledged so the agent forgets it.
    if (reportsOwnWork(this.queue, att.nodeId, msg)) await this.onReport(att, msg, now, typeof data === "string" ? data : undefined);
    // Taken for good (or moot): the agent may forget it. A report that failed is not acknowledged,
    // and the agent sends it again after its next reconnect.
    const ack = ackFor(msg);
    if (ack) this.send(ws, ack);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      /* already closed */
    }
    await this.dropAgent(ws);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    await this.dropAgent(ws);
  }

  override async alarm(): Promise<void> {
    this.alarmAt = null; // this one has fired
    const now = Date.now();
    for (const ws of this.ctx.getWebSockets()) {
      const att = ws.deserializeAttachment() as Attachment;
      const seen = att.hello ? att.lastSeen : att.connectedAt;
      if (now - seen > (att.hello ? SILENT_AFTER_MS : HELLO_WITHIN_MS)) {
        log("warn", "agent silent, closing", { nodeId: att.hello ? att.nodeId : undefined });
        await this.refuse(ws, 4000, "silent");
      } else if (att.hello) this.send(ws, { type: "ping", t: now });
    }
    for (const w of this.queue.overdue(now)) await this.expire(w, now);
    await this.retries.tick(now, (id) => this.outcomes.has(id));
    await this.pump();
    if (this.outcomes.count() || this.heldRows.waiting) await this.commits.run();
    await this.admission.refresh(now).catch((e) => log("warn", "refreshing admission leases failed", { error: String(e) }));
    if (this.chains.failed) this.chains.reload();
    await this.scheduleAlarm();
  }

  // ── internals ─────────────────────────────────────────────────────────────────────────────────

  private async onHello(ws: WebSocket, att: Attachment, h: Hello): Promise<void> {
    const now = Date.now();
    const admitted = await admitHello(this.db, att, h, now);
    if (!("bound" in admitted)) {
      log("warn", "hello refused", { nodeId: h.nodeId, ...admitted });
      return this.refuse(ws, admitted.code, admitted.reason);
    }
    if (ws.readyState !== WebSocket.OPEN) return; // closed (revoked, disabled, gone) while D1 answered
    const { bound, flags } = admitted;
    // A reconnecting agent replaces its old socket; the old one's close must not requeue its work.
    for (const other of this.sockets(h.nodeId)) if (other !== ws) {
      other.serializeAttachment({ hello: false, connectedAt: 0 } satisfies Attachment);
      try {
        other.close(4001, "replaced by a new connection");
      } catch {
        /* gone */
      }
    }
    // An agent from before slot shares offers every shard all its slots; this shard takes its share.
    const place = (!att.hello && att.place) || { shard: 0, shards: 1 };
    const slots = h.slotsShared ? h.slots : slotShare(h.slots, place.shards, place.shard);
    const state: AgentState = {
      nodeId: h.nodeId, cpus: h.cpus, memMiB: h.memMiB, privileged: h.privileged, egress: h.egress === true, langs: h.langs, slots, builds: h.builds, configs: h.configs === true,
      warm: [...new Set(h.warm.map((w) => w.functionId))].slice(0, MAX_WARM_REMEMBERED), draining: flags.draining, lastSeen: now, rttMs: 0,
      liveLogs: h.liveLogs === true,
    };
    this.refusals.saw(h.nodeId, state);
    const node = { tokenId: bound.tokenId, connectedAt: now, agentVersion: h.agentVersion, runtime: h.runtime, operatorDraining: flags.draining };
    ws.serializeAttachment({ hello: true, ...node, ...state } satisfies Attachment);
    // Work assigned to this node that it no longer runs (it restarted) goes back to the queue.
    const running = new Set(h.running.map((r) => r.id));
    const lost = this.queue.assignedTo(h.nodeId).filter((w) => !running.has(w.id));
    for (const w of lost) this.queue.requeueOne(w.id);
    this.send(ws, { type: "welcome", heartbeatMs: HEARTBEAT_MS, shard: this.ctx.id.toString() });
    this.send(ws, { type: "ping", t: now });
    log("info", "agent connected", { nodeId: h.nodeId, slots, privileged: h.privileged, egress: state.egress, requeued: lost.length });
    await this.pump();
    await this.scheduleAlarm();
  }

  private async onReport(agent: AgentState, msg: AgentMessage, now: number, frame?: string): Promise<void> {
    switch (msg.type) {
      case "heartbeat":
      case "pong":
      case "hello":
        return this.pump();
      case "task.done":
        return this.onTaskDone(agent, msg, now, frame);
      case "task.log": {
        const w = this.queue.get(msg.taskId);
        if (w) this.follows.lines(w, msg);
        return;
      }
      case "build.started":
        return this.builds.started(msg, now);
      case "build.log":
        return this.builds.logged(msg);
      case "build.done":
        if (await this.builds.done(msg, now)) await this.pump();
        return;
    }
  }

  private async onTaskDone(agent: AgentState, msg: TaskDone, now: number, frame?: string) {
    const w = this.queue.get(msg.taskId);
    if (!w) return; // already accepted (a duplicate or a late report after a requeue)
    const retried = this.retried(w, msg, now);
    if (!retried) this.accept(w, msg, now, agent.rttMs, frame);
    // The freed slot takes new work now, before the outcome reaches D1.
    await this.pump();
    if (retried) return this.scheduleAlarm();
    // Accepted is durable: the agent's acknowledgement need not wait for D1's batch, nor its gap.
    void this.commits.run().then(() => (this.retries.letters.size ? this.retries.letters.drain((id) => this.outcomes.has(id)) : undefined));
  }

  /**
   * A failed attempt with attempts left waits for its retry (worker/retries/), out of the queue. Its
   * assigned mark goes (the task is pending again); the storage it set is the function's, and the
   * next attempt gets it.
   */
  private retried(w: WorkRow, report: TaskDone | null, now: number): boolean {
    if (!this.retries.retry(w, report, now)) return false;
    this.marks.take(w.id);
    if (report?.storage) this.storage.apply(w.function_id, w.account_id, w.id, report.storage, now);
    return true;
  }

  /** The task leaves the queue and its outcome enters the log, in one synchronous step. */
  private accept(w: WorkRow, report: TaskDone | null, now: number, rttMs: number, frame?: string) {
    const mark = this.marks.take(w.id);
    this.follows.ended(w, report?.status ?? 504, report && !report.logUploaded ? report.log : null);
    this.queue.remove(w.id);
    if (report?.storage) this.storage.apply(w.function_id, w.account_id, w.id, report.storage, now);
    const attempts = this.retries.ended(w, report);
    const outcome: Outcome = { taskId: w.id, accountId: w.account_id, functionId: w.function_id, at: now, node: w.node, assignedAt: w.assigned_at, rttMs: mark?.rttMs ?? rttMs, report, ...attempts };
    this.outcomes.add(outcome, frame);
    this.life.accepted(outcome);
    // A dead letter was planned: the alarm sends it once the outcome is in D1, whoever accepted it.
    if (attempts && this.retries.letters.size) void this.scheduleAlarm();
  }

  private async expire(w: WorkRow, now: number): Promise<void> {
    if (w.node) this.sendTo(w.node, { type: "task.cancel", taskId: w.id });
    if (w.kind === "task") {
      if (!this.retried(w, null, now)) this.accept(w, null, now, 0); // written by the alarm's commit, with any others
    } else await this.builds.failed(w, "no result from the agent in time", now);
  }

  /** Work lost with its agent MAX_ATTEMPTS times fails rather than run again (see attempts.ts). */
  private abandon(w: WorkRow, now: number): void {
    log("warn", "work given up", { id: w.id, kind: w.kind, attempts: w.attempts });
    if (w.kind === "task") {
      this.accept(w, abandonedReport(w), now, 0);
      void this.commits.run();
    } else void this.builds.failed(w, abandonedReason(w), now).catch((e) => log("error", "failing a build failed", { buildId: w.id, error: String(e) }));
  }

  /** Assigns waiting work to agents with free slots. Storage first, then messages, then D1. */
  private async pump(): Promise<void> {
    const connected = this.connected();
    const agents = connected.map((c) => c.state);
    // Work held by a node with no open socket goes back first: a close event is not the only way
    // a socket ends, and work must never wait on an agent that is gone.
    this.queue.requeueAbsent(agents.map((a) => a.nodeId));
    for (const w of this.queue.exhausted()) this.abandon(w, Date.now());
    const busy = new Map(agents.map((a) => [a.nodeId, this.queue.countAssignedTo(a.nodeId)]));
    // Every agent full (the usual state under load): nothing to assign, no need to read the queue.
    if (!agents.some((a) => a.slots > busy.get(a.nodeId)!)) return;
    let free = agents.reduce((n, a) => n + Math.max(0, a.slots - busy.get(a.nodeId)!), 0);
    const assigned: { w: WorkRow; a: AgentState }[] = [];
    const builds = new BuildLimits(agents, () => agents.flatMap((a) => this.queue.assignedTo(a.nodeId)));
    const capped = this.caps.gate(this.queue.runningRows());
    for (const w of builds.window(this.queue.waiting(Infinity, capped?.held))) {
      const a = pickAgent(builds.eligible(w), w, busy);
      if (!a) continue;
      builds.assigned(w, a);
      capped?.took(w);
      busy.set(a.nodeId, (busy.get(a.nodeId) ?? 0) + 1);
      assigned.push({ w, a });
      if (--free === 0) break; // the rest of the queue waits; no need to read it
    }
    const now = Date.now();
    for (const { w, a } of assigned) {
      const queued = this.queue.assign(w.id, a.nodeId, now, now + w.timeout_s * 1000 + TASK_GRACE_MS);
      if (queued === undefined) continue;
      // The payload is the frame, serialized once when queued; a task gets its function's storage
      // and configuration as they are now, the configuration only in this frame, never stored.
      const deliver = (frame: string) => {
        for (const c of connected) if (c.state === a) this.sendRaw(c.ws, frame);
      };
      if (w.kind === "task") this.assignments.send(w, a, withStorage(queued, this.storage.given(w.function_id, w.id, agentPaths.storage)), deliver, now);
      else deliver(queued);
    }
    if (assigned.length) await this.scheduleAlarm();
    // A task created here shows its assignment from the shard (heldTask), and D1 gets it with the outcome.
    for (const { w, a } of assigned) if (w.kind === "task" && !this.heldRows.has(w.id)) this.marks.add({ taskId: w.id, node: a.nodeId, rttMs: a.rttMs, at: now });
    await this.assignments.flush();
  }

  /** Closes a socket the dispatcher no longer serves; its node's work goes back unless another socket holds the node. */
  private async refuse(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code, reason);
    } catch {
      /* gone */
    }
    await this.dropAgent(ws);
  }

  private async dropAgent(ws: WebSocket): Promise<void> {
    const att = ws.deserializeAttachment() as Attachment | null;
    if (!att?.hello) return;
    ws.serializeAttachment({ hello: false, connectedAt: 0 } satisfies Attachment);
    if (this.sockets(att.nodeId).some((o) => o !== ws)) return;
    const back = this.queue.requeueNode(att.nodeId);
    log("info", "agent disconnected", { nodeId: att.nodeId, requeued: back.length });
    await nodeLeft(this.db, att.nodeId, Date.now()).catch((e) => log("warn", "recording a node's last sight failed", { error: String(e) }));
    await this.pump();
  }

  /** Agents behind open sockets that said hello (a socket can linger, closing, before its close event). */
  private connected(): { ws: WebSocket; state: AgentState }[] {
    const out: { ws: WebSocket; state: AgentState }[] = [];
    for (const ws of this.ctx.getWebSockets()) {
      const att = ws.deserializeAttachment() as Attachment | null;
      if (att?.hello && ws.readyState === WebSocket.OPEN) out.push({ ws, state: att });
    }
    return out;
  }

  private agents(): AgentState[] {
    return this.connected().map((c) => c.state);
  }

  private sockets(nodeId: string): WebSocket[] {
    return this.ctx.getWebSockets().filter((ws) => {
      const att = ws.deserializeAttachment() as Attachment | null;
      return att?.hello && att.nodeId === nodeId && ws.readyState === WebSocket.OPEN;
    });
  }

  private sendTo(nodeId: string, msg: DispatcherMessage) {
    for (const ws of this.sockets(nodeId)) this.send(ws, msg);
  }

  private send(ws: WebSocket, msg: DispatcherMessage) {
    this.sendRaw(ws, JSON.stringify(msg));
  }

  private sendRaw(ws: WebSocket, frame: string) {
    try {
      ws.send(frame);
    } catch (e) {
      log("warn", "send failed", { error: String(e) });
    }
  }

  /** One alarm: the earliest work deadline, or the next liveness round while agents are connected. */
  private async scheduleAlarm(): Promise<void> {
    const deadline = this.outcomes.count() || this.heldRows.waiting || this.chains.failed ? Date.now() + RETRY_MS : this.queue.earliestDeadline();
    const liveness = this.ctx.getWebSockets().length ? Date.now() + HEARTBEAT_MS : null;
    const at = Math.min(deadline ?? Infinity, liveness ?? Infinity, this.retries.nextAt(Date.now()) ?? Infinity);
    if (at === Infinity) return;
    // Only this object sets its alarm, so after the first read the time is known in memory.
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt === null || this.alarmAt > at || this.alarmAt < Date.now()) {
      await this.ctx.storage.setAlarm(at);
      this.alarmAt = at;
    }
  }
}

