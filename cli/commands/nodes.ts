import { ok } from "../api-client.js";
import type { Answer } from "../../client/index.js";
import type { Command } from "../command.js";
import { fmtTime, yesNo } from "../output.js";

/** A node of the fleet as GET /v1/admin/nodes answers it. */
type FleetNode = Answer<"/v1/admin/nodes", "get">[number];

const ADMIN_NOTE = "Operator commands: pass the ADMIN_TOKEN with --token (or GCFAAS_TOKEN).";

const state = (n: FleetNode) => (n.disabled ? "disabled" : n.draining ? "draining" : n.connected ? "serving" : "offline");

const listNodes: Command = {
  name: "list",
  summary: "every node that is or was connected: state, slots, runtime, languages, round trip",
  usage: "nodes list",
  help: [ADMIN_NOTE],
  examples: ["gcfaas nodes list --token $ADMIN_TOKEN"],
  args: [0, 0],
  async run(ctx) {
    const nodes = await ok((await ctx.api()).GET("/v1/admin/nodes"));
    ctx.out.result(nodes, () =>
      ctx.out.table(
        nodes,
        [
          { title: "NODE", value: (n) => n.id },
          { title: "STATE", value: state },
          { title: "BUSY", value: (n) => `${n.busySlots}/${n.slots}` },
          { title: "RUNTIME", value: (n) => n.runtime ?? "-" },
          { title: "LANGS", value: (n) => n.langs.join(",") },
          { title: "PRIV", value: (n) => yesNo(n.privileged) },
          { title: "EGRESS", value: (n) => yesNo(n.egress) },
          { title: "RTT", value: (n) => (n.rttMs === null ? "-" : `${n.rttMs} ms`) },
          { title: "VERSION", value: (n) => n.agentVersion ?? "-" },
          { title: "LAST SEEN", value: (n) => fmtTime(n.lastSeen) },
        ],
        "(no nodes have connected yet)",
      ),
    );
  },
};

/** drain, resume and disable: one POST each, the same shape. */
function nodeAction(name: "drain" | "resume" | "disable", summary: string, done: string): Command {
  return {
    name,
    summary,
    usage: `nodes ${name} <node-id>`,
    help: [ADMIN_NOTE],
    examples: [`gcfaas nodes ${name} worker-7 --token $ADMIN_TOKEN`],
    args: [1, 1],
    async run(ctx, a) {
      const id = a.pos(0, "<node-id>");
      await ok((await ctx.api()).POST(`/v1/admin/nodes/{nodeId}/${name}`, { params: { path: { nodeId: id } } }));
      ctx.out.result({ id, action: name }, () => ctx.out.line(`node ${id} ${done}`));
    },
  };
}

export const nodes: Command = {
  name: "nodes",
  summary: "see and steer the fleet (operators): list, drain, resume, disable",
  usage: "nodes list|drain|resume|disable ...",
  subcommands: [
    listNodes,
    nodeAction("drain", "let a node finish its running work and take no more", "is draining: it finishes what runs and takes no more"),
    nodeAction("resume", "let a drained or disabled node take work again", "takes work again"),
    nodeAction("disable", "close a node's connections now (its work goes back to the queue) and refuse it", "is disabled: its sockets are closed and its work requeued"),
  ],
};
