import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { recordedAnywhere, type ShardArchiveFinder } from "../task-life/archived-reads.js";
import { stageInput, type NewTask } from "../tasks/row.js";
import type { TaskRow } from "../db/rows.js";
import { newTaskId } from "../dispatch/client.js";
import { MAX_HOPS } from "../chains/limits.js";
import { createInShard, type AskingShard } from "../task-life/create-in-shard.js";
import type { TaskInput } from "../../shared/schemas/task.js";
import { deadLetterBodyOf } from "./dead-letter-body.js";

interface Letter {
  taskId: string;
  accountId: string;
  /** The dead-letter function, and the id drawn for its task (once, so a drain run again issues the same task). */
  functionId: string;
  letterId: string;
}

type Log = (msg: string, extra: Record<string, unknown>) => void;

/**
 * Dead letters still to send, in the dispatcher's storage: planned in the same synchronous step
 * that logs the failed task's final outcome, sent once that outcome is in D1 (the letter is built
 * from the recorded task: its input, status, attempts and log). A letter is a task of the
 * dead-letter function, one hop further in the failed task's chain, created on that function's
 * shard as any task is; it is never retried and never dead-lettered itself. A dead-letter function
 * that cannot take it (deleted, no build, out of quota, the chain at its hop limit) loses it, with
 * a log line; a failed call is tried again by the alarm, and creates no second letter.
 */
export class DeadLetters {
  private letters = new Map<string, Letter>();
  private draining: Promise<void> | undefined;
  failed = false;

  constructor(
    private readonly env: Bindings,
    private readonly db: Db,
    private readonly sql: SqlStorage,
    private readonly self: AskingShard,
    private readonly log: Log,
    private readonly archive: ShardArchiveFinder,
  ) {
    sql.exec("create table if not exists dead_letter (task_id text primary key, letter text not null)");
    this.reload();
  }

  reload(): void {
    this.letters = new Map(this.sql.exec<{ task_id: string; letter: string }>("select task_id, letter from dead_letter").toArray().map((r) => [r.task_id, JSON.parse(r.letter) as Letter]));
  }

  get size(): number {
    return this.letters.size;
  }

  /** The letters' task ids, planned and maybe not yet queued (the orphan sweep must leave them). */
  planned(): Set<string> {
    return new Set([...this.letters.values()].map((l) => l.letterId));
  }

  plan(taskId: string, accountId: string, functionId: string): void {
    const letter: Letter = { taskId, accountId, functionId, letterId: newTaskId(this.env, functionId) };
    this.sql.exec("insert or ignore into dead_letter (task_id, letter) values (?, ?)", taskId, JSON.stringify(letter));
    if (!this.letters.has(taskId)) this.letters.set(taskId, letter);
  }

  /** Sends the letters whose failed task is recorded (`logged`: its outcome is still on its way to D1). */
  drain(logged: (taskId: string) => boolean): Promise<void> {
    this.draining ??= (async () => {
      this.failed = false;
      for (const l of [...this.letters.values()]) {
        if (logged(l.taskId)) continue;
        try {
          await this.send(l);
          this.sql.exec("delete from dead_letter where task_id = ?", l.taskId);
          this.letters.delete(l.taskId);
        } catch (e) {
          this.failed = true;
          this.log("sending a dead letter failed; retrying", { taskId: l.taskId, error: String(e) });
        }
      }
    })().finally(() => (this.draining = undefined));
    return this.draining;
  }

  private async send(l: Letter): Promise<void> {
    const failed = await recordedAnywhere(this.db, this.env.BUCKET, l.accountId, l.taskId, this.archive);
    if (!failed || failed.finishedAt == null) return this.drop(l, "the failed task is not recorded");
    if (failed.hop + 1 > MAX_HOPS) return this.drop(l, `the chain reached its limit of ${MAX_HOPS} hops`);
    const body = deadLetterBodyOf(failed, await this.inputOf(failed), await this.logOf(failed));
    const input: TaskInput = { method: "POST", query: {}, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
    const o: NewTask = { id: l.letterId, accountId: l.accountId, input, parentTaskId: failed.id, hop: failed.hop + 1, chainId: failed.chainId ?? failed.id };
    const now = Date.now();
    const staged = await stageInput(this.env.BUCKET, o, now);
    // Sent again after a failed call, the letter may exist: the shard looks before creating it.
    const made = await createInShard(this.env, this.self, { ...o, functionId: l.functionId, staged, now, once: true, mayExist: true });
    if ("refused" in made) this.drop(l, `the dead-letter function cannot take it: ${made.refused.message}`);
  }

  private drop(l: Letter, reason: string): void {
    this.log("dead letter not sent", { taskId: l.taskId, deadLetterFunctionId: l.functionId, reason });
  }

  private async inputOf(t: TaskRow): Promise<TaskInput | null> {
    if (t.input) return JSON.parse(t.input) as TaskInput;
    const obj = t.inputKey ? await this.env.BUCKET.get(t.inputKey) : null;
    return obj ? ((await obj.json()) as TaskInput) : null;
  }

  private async logOf(t: TaskRow): Promise<string[]> {
    if (t.log) return t.log;
    const obj = t.logKey ? await this.env.BUCKET.get(t.logKey) : null;
    return obj ? ((await obj.json()) as string[]) : [];
  }
}
