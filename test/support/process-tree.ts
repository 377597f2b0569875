import fs from "node:fs";

/** The parent pid of every process on the host, from /proc/<pid>/stat. */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      // The command name (field 2) may hold spaces and parentheses: fields after its last ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      out.set(Number(entry), ppid);
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Every live descendant of `root` (children, grandchildren, …). */
export function descendants(root: number): number[] {
  const ppids = parents();
  const found: number[] = [];
  let frontier = [root];
  while (frontier.length) {
    const next = [...ppids].filter(([, ppid]) => frontier.includes(ppid)).map(([pid]) => pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/** The command line as `ps` shows it to any user of the host; "" for a process gone meanwhile. */
export function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}
