import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { ROOT } from "./harness.js";

/** A bookworm minbase root, built once with mmdebstrap (about 30 s) and unpacked fresh per test file. */
const TARBALL = path.join(ROOT, ".state/install-agent/bookworm-minbase.tar");
/**
 * Where the roots are unpacked: neither under /tmp nor under the checkout, which may itself be under
 * /tmp (as a CI clone can be), since the installer refuses a state folder there (the unit's
 * PrivateTmp would hide it) and the tests keep the agent's state in the root's shared folder.
 */
const ROOTS_DIR = "/var/lib/gcfaas-tests/install-agent";

/**
 * Test arrangement, not how a host runs: commands in the root see the host's Docker Engine through
 * its socket, and `shared` (a host folder) at the same path, because the engine resolves the bind
 * mounts the agent asks for on the host. Each command runs in a mount namespace of its own, so
 * these mounts vanish with it and nothing is left mounted on the host.
 */
const ENTER = `set -e
R="$1"; S="$2"; shift 2
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
touch "$R/run/docker.sock"
mount --bind /var/run/docker.sock "$R/run/docker.sock"
mkdir -p "$R$S"
mount --bind "$S" "$R$S"
exec chroot "$R" "$@"`;

export const ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export interface RunResult {
  code: number | null;
  output: string;
}

export class DebianRoot {
  private constructor(
    readonly dir: string,
    readonly root: string,
    /** A host folder seen at the same path inside the root. */
    readonly shared: string,
  ) {}

  static async create(): Promise<DebianRoot> {
    if (!existsSync(TARBALL)) {
      await fs.mkdir(path.dirname(TARBALL), { recursive: true });
      const partial = TARBALL.replace(/\.tar$/, ".partial.tar");
      const made = await collect(spawn("mmdebstrap", ["--quiet", "--variant=minbase", "--aptopt=APT::Install-Recommends \"false\"", "bookworm", partial], { stdio: ["ignore", "pipe", "pipe"] }));
      if (made.code !== 0) throw new Error(`mmdebstrap failed:\n${made.output}`);
      await fs.rename(partial, TARBALL);
    }
    await fs.mkdir(ROOTS_DIR, { recursive: true });
    const dir = await fs.mkdtemp(path.join(ROOTS_DIR, "root-"));
    const root = path.join(dir, "root");
    const shared = path.join(dir, "shared");
    await fs.mkdir(root);
    await fs.mkdir(shared, { mode: 0o700 });
    const unpacked = await collect(spawn("tar", ["--extract", "--file", TARBALL, "--directory", root], { stdio: ["ignore", "pipe", "pipe"] }));
    if (unpacked.code !== 0) throw new Error(`unpacking the root failed:\n${unpacked.output}`);
    await fs.copyFile("/etc/resolv.conf", path.join(root, "etc/resolv.conf"));
    // Debian's way of keeping package scripts from starting daemons in a chroot: docker.io's
    // would otherwise start a second dockerd on the host's socket.
    await fs.writeFile(path.join(root, "usr/sbin/policy-rc.d"), "#!/bin/sh\nexit 101\n", { mode: 0o755 });
    return new DebianRoot(dir, root, shared);
  }

  /** A path inside the root, as seen from the host. */
  file(p: string): string {
    return path.join(this.root, p);
  }

  /** Starts `argv` inside the root with exactly `env` (plus PATH); `input` is its standard input. */
  spawn(argv: string[], env: Record<string, string> = {}, cwd = "/", input?: string): ChildProcess {
    const vars = Object.entries({ PATH: ROOT_PATH, ...env }).map(([k, v]) => `${k}=${v}`);
    const child = spawn("unshare", ["--mount", "--propagation", "private", "sh", "-c", ENTER, "sh", this.root, this.shared, "/usr/bin/env", "-i", "-C", cwd, ...vars, ...argv], {
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    child.stdin?.end(input);
    return child;
  }

  run(argv: string[], env: Record<string, string> = {}, input?: string): Promise<RunResult> {
    return collect(this.spawn(argv, env, "/", input));
  }

  async dispose(): Promise<void> {
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}

function collect(child: ChildProcess): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    let output = "";
    child.stdout?.on("data", (d: Buffer) => (output += d));
    child.stderr?.on("data", (d: Buffer) => (output += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** Lines KEY=value, comments and blank lines elsewhere: systemd's EnvironmentFile as install-agent.sh writes it. */
function keyValues(text: string, key: RegExp): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0 && key.test(line.slice(0, at))) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

export const parseEnvFile = (text: string) => keyValues(text, /^[A-Z_][A-Z0-9_]*$/);

/** The [Service] settings of a unit file. */
export const parseUnit = (text: string) => keyValues(text.split(/^\[Service\]$/m)[1]?.split(/^\[/m)[0] ?? "", /^[A-Za-z]+$/);
