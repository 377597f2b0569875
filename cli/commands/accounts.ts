import { ok } from "../api-client.js";
import type { Answer } from "../../client/index.js";
import type { Command } from "../command.js";
import { UsageError } from "../errors.js";
import { yesNo } from "../output.js";

/** An account as GET /v1/admin/accounts/<id> answers it. */
type AccountView = Answer<"/v1/admin/accounts/{accountId}", "get">;

const ADMIN_NOTE = "Operator commands: pass the ADMIN_TOKEN with --token (or GCFAAS_TOKEN).";

/** Option name → the API's limit name. */
const LIMIT_OPTIONS = { schedules: "schedules", "queued-builds": "queuedBuilds", "artifacts-kept": "artifactsKept", "sync-waits": "syncWaits" } as const;

const showAccount: Command = {
  name: "show",
  summary: "an account's plan, its grants and the limits that apply to it",
  usage: "accounts show <account-id>",
  help: [ADMIN_NOTE],
  examples: ["gcfaas accounts show 01jd3x... --token $ADMIN_TOKEN"],
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<account-id>");
    const acct = await ok((await ctx.api()).GET("/v1/admin/accounts/{accountId}", { params: { path: { accountId: id } } }));
    ctx.out.result(acct, () => {
      ctx.out.line(`account ${acct.id} (${acct.name}), plan ${acct.plan}`);
      ctx.out.line(grantsLine(acct));
      ctx.out.table(Object.entries(acct.limits), [
        { title: "LIMIT", value: ([name]) => name },
        { title: "VALUE", value: ([, value]) => String(value) },
      ], "");
    });
  },
};

const setAccountLimits: Command = {
  name: "limits",
  summary: "change an account's limits (a number, or `default` for the operator's default)",
  usage: "accounts limits <account-id> [--schedules N] [--queued-builds N] [--artifacts-kept N] [--sync-waits N]",
  help: [ADMIN_NOTE, "Limits not named keep their value. Going past a limit answers 429 limit_reached (see docs/security.md)."],
  examples: ["gcfaas accounts limits 01jd3x... --schedules 500 --sync-waits default --token $ADMIN_TOKEN"],
  options: Object.fromEntries(Object.keys(LIMIT_OPTIONS).map((o) => [o, { type: "string" }])),
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<account-id>");
    const limits: Record<string, number | null> = {};
    for (const [option, name] of Object.entries(LIMIT_OPTIONS)) {
      const v = a.str(option);
      if (v === undefined) continue;
      if (v === "default") limits[name] = null;
      else if (/^\d+$/.test(v)) limits[name] = Number(v);
      else throw new UsageError(`--${option} must be a whole number or "default", got "${v}"`, a.command);
    }
    if (!Object.keys(limits).length) throw new UsageError("name at least one limit to change", a.command);
    const api = await ctx.api();
    await ok(api.PATCH("/v1/admin/accounts/{accountId}", { params: { path: { accountId: id } }, body: { limits } }));
    const acct = await ok(api.GET("/v1/admin/accounts/{accountId}", { params: { path: { accountId: id } } }));
    ctx.out.result(acct, () => ctx.out.line(`account ${acct.id}: ${Object.entries(acct.limits).map(([k, v]) => `${k} ${v}`).join(", ")}`));
  },
};

const grantsLine = (acct: AccountView) => `privileged functions: ${yesNo(acct.privileged)}, network egress: ${yesNo(acct.egress)}`;

const setGrants: Command = {
  name: "grant",
  summary: "grant or revoke what an account's functions may do: --egress (reach the network), --privileged",
  usage: "accounts grant <account-id> [--egress true|false] [--privileged true|false]",
  help: [
    ADMIN_NOTE,
    "--egress true|false      let the account's functions reach public addresses (network egress)",
    "--privileged true|false  let the account's functions run privileged (as root, outside gVisor)",
    "",
    "Both are off for a new account. Revoking one turns it off on the account's functions and ends",
    "their tasks that needed it, waiting or running, with status 403.",
  ],
  examples: ["gcfaas accounts grant 01jd3x... --egress true --token $ADMIN_TOKEN", "gcfaas accounts grant 01jd3x... --egress false --token $ADMIN_TOKEN"],
  options: { egress: { type: "string" }, privileged: { type: "string" } },
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<account-id>");
    const grants = Object.fromEntries((["egress", "privileged"] as const).flatMap((g) => (a.bool(g) === undefined ? [] : [[g, a.bool(g)]])));
    if (!Object.keys(grants).length) throw new UsageError("name a grant to change: --egress true|false or --privileged true|false", a.command);
    const api = await ctx.api();
    await ok(api.PATCH("/v1/admin/accounts/{accountId}", { params: { path: { accountId: id } }, body: grants }));
    const acct = await ok(api.GET("/v1/admin/accounts/{accountId}", { params: { path: { accountId: id } } }));
    ctx.out.result(acct, () => ctx.out.line(`account ${acct.id}: ${grantsLine(acct)}`));
  },
};

export const accounts: Command = {
  name: "accounts",
  summary: "see and change an account's grants and plan limits (operators): show, grant, limits",
  usage: "accounts show|grant|limits ...",
  subcommands: [showAccount, setGrants, setAccountLimits],
};
