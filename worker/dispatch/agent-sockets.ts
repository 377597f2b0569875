import type { DispatcherMessage } from "../../shared/protocol/messages.js";
import type { AgentState, Attachment } from "./agents.js";
import { log } from "./dispatcher-log.js";

/** An agent that said hello, and its open socket. */
export interface ConnectedAgent {
  ws: WebSocket;
  state: AgentState;
}

/** The shard's agent sockets (hibernation API: the runtime keeps them, each agent's state in its attachment). */
export class AgentSockets {
  constructor(private readonly ctx: Pick<DurableObjectState, "getWebSockets">) {}

  /** Agents behind open sockets that said hello (a socket can linger, closing, before its close event). */
  connected(): ConnectedAgent[] {
    const out: ConnectedAgent[] = [];
    for (const ws of this.ctx.getWebSockets()) {
      const att = ws.deserializeAttachment() as Attachment | null;
      if (att?.hello && ws.readyState === WebSocket.OPEN) out.push({ ws, state: att });
    }
    return out;
  }

  agents(): AgentState[] {
    return this.connected().map((c) => c.state);
  }

  of(nodeId: string): WebSocket[] {
    return this.connected()
      .filter((c) => c.state.nodeId === nodeId)
      .map((c) => c.ws);
  }

  /** Starts or stops a task's live log on its node, if the agent streams them. */
  follow(nodeId: string, taskId: string, on: boolean) {
    for (const ws of this.of(nodeId)) if ((ws.deserializeAttachment() as AgentState).liveLogs) this.send(ws, { type: "task.follow", taskId, on });
  }

  sendTo(nodeId: string, msg: DispatcherMessage) {
    for (const ws of this.of(nodeId)) this.send(ws, msg);
  }

  sendRawTo(nodeId: string, frame: string) {
    for (const ws of this.of(nodeId)) this.sendRaw(ws, frame);
  }

  send(ws: WebSocket, msg: DispatcherMessage) {
    this.sendRaw(ws, JSON.stringify(msg));
  }

  sendRaw(ws: WebSocket, frame: string) {
    try {
      ws.send(frame);
    } catch (e) {
      log("warn", "send failed", { error: String(e) });
    }
  }
}
