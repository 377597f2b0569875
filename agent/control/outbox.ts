import { ackFor, ackKey, type Ack, type AgentMessage } from "../../shared/protocol/messages.js";

type Report = Exclude<AgentMessage, { type: "hello" | "heartbeat" | "pong" }>;

/**
 * Reports (a task's outcome, a build's progress) not yet acknowledged by the dispatcher. A frame
 * sent on a socket that then dies may or may not have arrived; each report stays here until its
 * ack and is sent again after every reconnect until then. The dispatcher takes a report once,
 * however often it comes.
 */
export class Outbox {
  /** In the order first sent (a Map keeps insertion order), so a build's lines stay before its end. */
  private readonly unacked = new Map<string, Report>();

  /** Keeps `m` if it is a report; false for frames that need no ack. */
  keep(m: AgentMessage): boolean {
    const a = ackFor(m);
    if (a) this.unacked.set(ackKey(a), m as Report);
    return a !== undefined;
  }

  settle(a: Ack): void {
    this.unacked.delete(ackKey(a));
  }

  /**
   * Work whose outcome awaits its ack, as hello's `running` lists it: the dispatcher then keeps it
   * assigned here rather than give it to another agent before the outcome, sent after hello, arrives.
   */
  finishing(): { kind: "task" | "build"; id: string }[] {
    return this.pending().flatMap<{ kind: "task" | "build"; id: string }>((m) =>
      m.type === "task.done" ? [{ kind: "task", id: m.taskId }] : m.type === "build.done" ? [{ kind: "build", id: m.buildId }] : [],
    );
  }

  pending(): Report[] {
    return [...this.unacked.values()];
  }

  get size(): number {
    return this.unacked.size;
  }
}
