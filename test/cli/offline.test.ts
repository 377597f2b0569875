import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import yauzl from "yauzl";
import { describe, expect, it } from "vitest";
import { zipFolderContents } from "../../cli/zip.js";
import { COMMANDS } from "../../cli/main.js";
import { runCli, show } from "./run-cli.js";
import { linesAfter } from "../../cli/build-follow.js";

// What the CLI does without a service: usage errors, help, zipping.
describe("zipping a folder", () => {
  it("zips its contents (not the folder), with subfolders, without .gcfaas.json or .git", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-zip-"));
    await fs.mkdir(path.join(dir, "src"));
    await fs.mkdir(path.join(dir, ".git"));
    await fs.writeFile(path.join(dir, "Cargo.toml"), "[package]\n");
    await fs.writeFile(path.join(dir, "src/lib.rs"), "// lib\n");
    await fs.writeFile(path.join(dir, ".git/HEAD"), "ref\n");
    await fs.writeFile(path.join(dir, ".gcfaas.json"), "{}\n");
    const { zip, files } = await zipFolderContents(dir);
    expect(files).toEqual(["Cargo.toml", "src/lib.rs"]);
    const names = await new Promise<string[]>((resolve, reject) =>
      yauzl.fromBuffer(zip, { lazyEntries: true }, (err, z) => {
        if (err) return reject(err);
        const seen: string[] = [];
        z.on("entry", (e: yauzl.Entry) => {
          seen.push(e.fileName);
          z.readEntry();
        });
        z.on("end", () => resolve(seen));
        z.readEntry();
      }),
    );
    expect(names).toEqual(["Cargo.toml", "src/lib.rs"]);
    await fs.rm(dir, { recursive: true, force: true });
  });
});

describe("command line", () => {
  const noLogin = { env: { GCFAAS_CONFIG: path.join(os.tmpdir(), "gcfaas-none", "config.json") } };

  it("prints help listing every command, and per-command help", async () => {
    const r = await runCli(["--help"], noLogin);
    expect(r.code, show(r)).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toContain(`  ${c.name} `);
    const sub = await runCli(["endpoints", "create", "--help"], noLogin);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toContain("Usage: gcfaas endpoints create");
  });

  it.each([
    [["frobnicate"], /error: usage: unknown command "frobnicate"/],
    [["list", "--bogus"], /error: usage: Unknown option '--bogus'/],
    [["tags", "rename"], /error: usage: unknown subcommand "rename"/],
    [["init", "x"], /error: usage: missing --lang/],
    [["init", "x", "--lang", "cobol"], /error: usage: unknown language "cobol"; use one of py, js, go, rb, rs, cs/],
    [["invoke", "abc", "--data", "{not json"], /error: usage: --data must be valid JSON/],
    [["invoke", "abc", "--query", "novalue"], /error: usage: --query takes key=value/],
    [["capabilities", "abc", "--privileged", "maybe"], /error: usage: --privileged must be true or false/],
    [["capabilities", "abc", "--timeout", "soon"], /error: usage: --timeout must be a number/],
    [["result"], /error: usage: missing argument/],
    [["invoke", "abc", "--json", '{"name":"Cy"}'], /error: usage: unexpected argument "\{"name":"Cy"\}"; to send it as the JSON body: --data '\{"name":"Cy"\}' \(--json formats gcfaas's own output\)/],
    [["invoke", "abc", "extra"], /error: usage: unexpected argument "extra"$/m],
  ])("usage error %j exits 2", async (args, message) => {
    const r = await runCli(args, { ...noLogin, env: { ...noLogin.env, GCFAAS_URL: "http://127.0.0.1:9", GCFAAS_TOKEN: "x" } });
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it("without a login, says how to log in (exit 2)", async () => {
    const r = await runCli(["list", "--json"], noLogin);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toMatch(/^error: not_logged_in: /m);
    expect(r.stderr).toContain("gcfaas login --url URL --token TOKEN");
    expect(r.json()).toMatchObject({ error: { code: "not_logged_in" } });
  });
});

describe("following a build's log", () => {
  const marker = (n: number) => `… ${n} lines cut …`;
  const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `l${from + i}`);

  it("prints each line once across polls, and the lines that fell into the cut as one marker", () => {
    let seen = 0;
    const printed: string[] = [];
    const poll = (log: string[], logLines: number) => {
      const next = linesAfter({ log, logLines }, seen);
      printed.push(...next.lines);
      seen = next.seen;
    };
    poll(lines(0, 3), 3);
    poll(lines(0, 500), 500);
    poll([...lines(0, 500), marker(100), ...lines(600, 1100)], 1100);
    poll([...lines(0, 500), marker(150), ...lines(650, 1150)], 1150);
    expect(printed).toEqual([...lines(0, 500), marker(100), ...lines(600, 1150)]);
  });

  it("takes the whole log as lines from a server that sends no logLines", () => {
    expect(linesAfter({ log: ["a", "b", "c"] }, 1)).toEqual({ lines: ["b", "c"], seen: 3 });
  });
});
