import readline from "node:readline";
import type { Readable } from "node:stream";

/**
 * workerd's report of a write to a connection whose client had already hung up (a closed browser
 * tab, a Ctrl-C'd curl, the front door dropping a request its client left). workerd logs it as an
 * error with a native stack on the next line; for a server, a client that leaves is not an error.
 */
const CLIENT_LEFT = /disconnected: .*(Broken pipe|Connection reset by peer)/;

export const CLIENT_LEFT_LINE = "[workerd] a client disconnected before its answer was complete";

/**
 * Passes workerd's output on line by line, with each client-left error and its `stack:` line cut
 * to CLIENT_LEFT_LINE.
 */
export function quietDisconnects(input: Readable, write: (line: string) => void): void {
  let dropStack = false;
  readline.createInterface({ input }).on("line", (line) => {
    if (dropStack && line.startsWith("stack:")) {
      dropStack = false;
      return;
    }
    dropStack = CLIENT_LEFT.test(line);
    write(dropStack ? CLIENT_LEFT_LINE : line);
  });
}
