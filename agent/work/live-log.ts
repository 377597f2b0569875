import { LIVE_LOG_BATCH_MS, LIVE_LOG_FRAME_BYTES, MAX_LIVE_LOG_LINES, type AgentMessage } from "../../shared/protocol/messages.js";
import type { LineFeed } from "../runner/invocation-log.js";
import type { LiveOutput } from "../runner/types.js";
import { maskSecrets } from "./mask-secrets.js";

type TaskLog = Extract<AgentMessage, { type: "task.log" }>;

/** A line's bytes in a frame: its JSON string and a comma. */
const jsonBytes = (line: string): number => Buffer.byteLength(JSON.stringify(line)) + 1;

/**
 * One task's live output. It costs nothing until the dispatcher says someone follows the task
 * (`task.follow`): only then does it watch the container's output, sending the lines so far and
 * then new lines, gathered for LIVE_LOG_BATCH_MS into `task.log` frames. Sending never waits: a
 * frame goes to the socket or, while it is down, nowhere (the finished log has every line).
 */
export class LiveLog implements LiveOutput {
  private feed?: LineFeed;
  private following = false;
  /** Number of the first line in `pending`. */
  private next = 0;
  private pending: string[] = [];
  private cut = false;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly taskId: string,
    private readonly send: (m: TaskLog) => void,
    /** A function's secrets are masked in what it streams, as in its finished log. */
    private readonly secrets: string[],
  ) {}

  /** The dispatcher's `task.follow`: a new follower gets every line from the first again. */
  follow(on: boolean): void {
    this.following = on;
    if (!this.feed) return;
    if (on) this.watch(this.feed);
    else this.stop();
  }

  attach(feed: LineFeed): void {
    this.feed = feed;
    if (this.following) this.watch(feed);
  }

  detach(): void {
    this.flush();
    this.stop();
    this.feed = undefined;
  }

  private watch(feed: LineFeed): void {
    const soFar = feed.watch(
      (line) => this.add(line),
      () => {
        this.cut = true;
        this.schedule();
      },
    );
    // Lines printed before are in `soFar`, pending ones included: numbering starts again at 0.
    this.next = 0;
    this.pending = soFar;
    this.flush();
  }

  private stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.feed?.unwatch();
    this.next += this.pending.length;
    this.pending = [];
  }

  private add(line: string): void {
    this.pending.push(line);
    this.schedule();
  }

  private schedule(): void {
    this.timer ??= setTimeout(() => this.flush(), LIVE_LOG_BATCH_MS);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const lines = maskSecrets(this.pending, this.secrets);
    this.pending = [];
    const cut = this.cut ? ({ cut: true } as const) : {};
    if (lines.length === 0 && this.cut) this.send({ type: "task.log", taskId: this.taskId, first: this.next, lines: [], ...cut });
    for (let at = 0; at < lines.length; ) {
      let end = at;
      for (let bytes = 0; end < lines.length && end - at < MAX_LIVE_LOG_LINES; end++) {
        bytes += jsonBytes(lines[end]!);
        if (bytes > LIVE_LOG_FRAME_BYTES && end > at) break;
      }
      this.send({ type: "task.log", taskId: this.taskId, first: this.next, lines: lines.slice(at, end), ...(end === lines.length ? cut : {}) });
      this.next += end - at;
      at = end;
    }
    // Said once: lines past the bounds are not streamed, the finished log's note counts them.
    if (this.cut) this.cut = false;
  }
}
