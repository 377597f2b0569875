import { and, desc, eq, sql } from "drizzle-orm";
import { chunks, runBatch, type Db } from "../db/client.js";
import { functionConfig } from "../db/schema.js";
import { ApiError, notFound, validationFailed } from "../errors.js";
import { getOwnFunction } from "../services/functions.js";
import { iso } from "../lib/time.js";
import { entryFrameBytes, MAX_CONFIG_FRAME_BYTES, MAX_SECRETS, type EnvVars } from "../../shared/schemas/function-config.js";
import { sealSecret } from "./secret-box.js";

/**
 * A function's environment variables and secrets in D1 (one table, one row a name: a variable and a
 * secret cannot share a name, whichever is written first). Secrets are sealed before they are
 * written and opened only for a task's assignment (task-config.ts); no read here returns a value.
 */

const nameTaken = (name: string, kind: "variable" | "secret") =>
  new ApiError("name_taken", `${name} is already a ${kind} of this function; a variable and a secret may not share a name`, [{ field: name, message: `is a ${kind}` }]);

const tooLarge = (bytes: number) =>
  validationFailed([{ field: "body", message: `variables and secrets would take ${bytes} bytes; at most ${MAX_CONFIG_FRAME_BYTES}` }]);

const ofKind = (functionId: string, kind: "env" | "secret") => and(eq(functionConfig.functionId, functionId), eq(functionConfig.kind, kind));

export async function readEnv(db: Db, accountId: string, functionId: string): Promise<EnvVars> {
  await getOwnFunction(db, accountId, functionId);
  const rows = await db.select({ name: functionConfig.name, value: functionConfig.value }).from(functionConfig).where(ofKind(functionId, "env")).orderBy(functionConfig.name);
  return Object.fromEntries(rows.map((r) => [r.name, r.value]));
}

/** Replaces every variable: all or nothing (one batch), refused when a name is a secret's. */
export async function replaceEnv(db: Db, accountId: string, functionId: string, vars: EnvVars, now = Date.now()): Promise<void> {
  await getOwnFunction(db, accountId, functionId);
  const secrets = await db.select({ name: functionConfig.name, size: functionConfig.size }).from(functionConfig).where(ofKind(functionId, "secret"));
  const clash = secrets.find((s) => Object.hasOwn(vars, s.name));
  if (clash) throw nameTaken(clash.name, "secret");
  const rows = Object.entries(vars).map(([name, value]) => ({ functionId, name, kind: "env" as const, value, size: entryFrameBytes(name, value), updatedAt: now }));
  const bytes = [...secrets, ...rows].reduce((n, r) => n + r.size, 0);
  if (bytes > MAX_CONFIG_FRAME_BYTES) throw tooLarge(bytes);
  try {
    // D1 binds at most 100 parameters a statement: six a row.
    await runBatch(db, [db.delete(functionConfig).where(ofKind(functionId, "env")), ...chunks(rows, 16).map((part) => db.insert(functionConfig).values(part))]);
  } catch (e) {
    // A secret of one of these names was set meanwhile: the batch wrote nothing.
    const raced = await db.select({ name: functionConfig.name }).from(functionConfig).where(ofKind(functionId, "secret"));
    const name = raced.find((s) => Object.hasOwn(vars, s.name))?.name;
    if (name) throw nameTaken(name, "secret");
    throw e;
  }
}

export async function listSecrets(db: Db, accountId: string, functionId: string): Promise<{ name: string; updatedAt: string }[]> {
  await getOwnFunction(db, accountId, functionId);
  const rows = await db
    .select({ name: functionConfig.name, updatedAt: functionConfig.updatedAt })
    .from(functionConfig)
    .where(ofKind(functionId, "secret"))
    .orderBy(desc(functionConfig.updatedAt), functionConfig.name);
  return rows.map((r) => ({ name: r.name, updatedAt: iso(r.updatedAt)! }));
}

/**
 * Creates or replaces one secret. The count and size limits are conditions of the write itself, so
 * two writes at once cannot both pass them; when nothing was written, a read says which refused.
 */
export async function putSecret(db: Db, key: string | undefined, accountId: string, functionId: string, name: string, value: string, now = Date.now()): Promise<void> {
  await getOwnFunction(db, accountId, functionId);
  const sealed = await sealSecret(key, functionId, name, value);
  const size = entryFrameBytes(name, value);
  const written = await db.run(sql`
    insert into function_config (function_id, name, kind, value, size, updated_at)
    select ${functionId}, ${name}, 'secret', ${sealed}, ${size}, ${now}
    where (select count(*) from function_config where function_id = ${functionId} and kind = 'secret' and name <> ${name}) < ${MAX_SECRETS}
      and (select coalesce(sum(size), 0) from function_config where function_id = ${functionId} and name <> ${name}) + ${size} <= ${MAX_CONFIG_FRAME_BYTES}
    on conflict (function_id, name) do update set value = excluded.value, size = excluded.size, updated_at = excluded.updated_at
      where function_config.kind = 'secret'`);
  if (written.meta.changes > 0) return;
  const rows = await db.select({ name: functionConfig.name, kind: functionConfig.kind, size: functionConfig.size }).from(functionConfig).where(eq(functionConfig.functionId, functionId));
  if (rows.some((r) => r.name === name && r.kind === "env")) throw nameTaken(name, "variable");
  const others = rows.filter((r) => r.name !== name);
  if (others.filter((r) => r.kind === "secret").length >= MAX_SECRETS)
    throw validationFailed([{ field: "name", message: `the function holds ${MAX_SECRETS} secrets, the most it may` }]);
  throw tooLarge(others.reduce((n, r) => n + r.size, size));
}

export async function deleteSecret(db: Db, accountId: string, functionId: string, name: string): Promise<void> {
  await getOwnFunction(db, accountId, functionId);
  const done = await db.delete(functionConfig).where(and(ofKind(functionId, "secret"), eq(functionConfig.name, name)));
  if (done.meta.changes === 0) throw notFound("secret");
}
