import { ok } from "../api-client.js";
import type { Command } from "../command.js";
import { UsageError } from "../errors.js";
import { resolveFunctionRef } from "../project.js";

const EGRESS = ["none", "internet"] as const;
type Egress = (typeof EGRESS)[number];
const isEgress = (v: string): v is Egress => (EGRESS as readonly string[]).includes(v);

const MEANING: Record<Egress, string> = {
  none: "none (no network: loopback only)",
  internet: "internet (public addresses only; runs on nodes that allow egress)",
};

export const network: Command = {
  name: "network",
  summary: "show what a function may reach, or set it: none (no network, the default) or internet",
  usage: "network <function-id|name|dir> [none|internet]",
  help: [
    "none      no network: the function sees only loopback (the default)",
    "internet  public addresses only; never private, loopback, link-local (cloud metadata) or",
    "          reserved ranges, the node itself or other functions. Needs the operator's grant",
    "          for the account (403 egress_not_allowed otherwise) and runs only on nodes whose",
    "          agent allows egress.",
    "",
    "Without a value, shows the current setting. Tasks already issued keep theirs.",
  ],
  examples: ["gcfaas network ./hello", "gcfaas network ./hello internet", "gcfaas network 01jc9x2k7m none"],
  args: [1, 2],
  async run(ctx, a) {
    const egress = a.positionals[1];
    if (egress !== undefined && !isEgress(egress)) throw new UsageError(`the network setting is none or internet, not "${egress}"`, "network");
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "network");
    const api = await ctx.api();
    const path = { params: { path: { id: ref.id } } };
    if (egress) await ok(api.PUT("/v1/function/{id}/network", { ...path, body: { egress } }));
    const n = await ok(api.GET("/v1/function/{id}/network", path));
    ctx.out.result(n, () => {
      if (egress) ctx.out.note(`network of ${ref.id} updated`);
      ctx.out.fields([
        ["function", ref.id],
        ["egress", MEANING[n.egress] ?? n.egress],
      ]);
    });
  },
};
