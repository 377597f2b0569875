import { integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const accounts = sqliteTable("accounts", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  plan: text("plan").notNull().default("DEVELOPER"),
  /** The operator's grant to run privileged functions (off by default; see docs/security.md). */
  privileged: integer("privileged", { mode: "boolean" }).notNull().default(false),
  /** The operator's grant to let functions reach the network (off by default; worker/egress/). */
  egress: integer("egress", { mode: "boolean" }).notNull().default(false),
  /** The operator's own values of this account's limits (worker/limits/); absent ones take the defaults. */
  limits: text("limits", { mode: "json" }).$type<Partial<Record<string, number>>>(),
  createdAt: integer("created_at").notNull(),
});

/**
 * Tokens are kept only as SHA-256 hashes. Agent tokens have no account, open agent routes only and
 * speak for one node (`node_id`); agent tokens minted before nodes were bound have none and are refused.
 */
export const tokens = sqliteTable(
  "tokens",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").references(() => accounts.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["user", "agent"] }).notNull(),
    name: text("name"),
    nodeId: text("node_id"),
    hash: text("hash").notNull(),
    createdAt: integer("created_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("tokens_hash").on(t.hash)],
);

/**
 * Every node that has said hello: what it last reported (for the fleet list) and the operator's
 * flags. A disabled node is refused at connect; a draining one finishes its work and takes no more.
 */
export const nodes = sqliteTable("nodes", {
  id: text("id").primaryKey(),
  agentVersion: text("agent_version"),
  runtime: text("runtime"),
  slots: integer("slots").notNull(),
  langs: text("langs", { mode: "json" }).$type<string[]>().notNull(),
  privileged: integer("privileged", { mode: "boolean" }).notNull(),
  /** Its agent was started with `--egress` (hello `egress`): it runs functions that reach the network. */
  egress: integer("egress", { mode: "boolean" }).notNull().default(false),
  connectedAt: integer("connected_at"),
  lastSeen: integer("last_seen").notNull(),
  draining: integer("draining", { mode: "boolean" }).notNull().default(false),
  disabled: integer("disabled", { mode: "boolean" }).notNull().default(false),
  createdAt: integer("created_at").notNull(),
});
