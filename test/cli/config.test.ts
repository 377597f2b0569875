import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, api, LocalWorker } from "../e2e/harness.js";
import { runCli, show } from "./run-cli.js";

// `gcfaas env …` and `gcfaas secret …` against a local Worker; no agent is needed.
const SECRET = "sk_live_cli-from-stdin-only";
let worker: LocalWorker;
let token: string;
let functionId: string;
let folder: string;

const gc = (args: string[], o: { input?: string; cwd?: string } = {}) =>
  runCli(args, { env: { GCFAAS_URL: worker.url, GCFAAS_TOKEN: token, GCFAAS_CONFIG: "/nonexistent/gcfaas.json" }, ...o });
const ok = async (args: string[], o: { input?: string; cwd?: string } = {}) => {
  const r = await gc(args, o);
  expect(r.code, `gcfaas ${args.join(" ")}\n${show(r)}`).toBe(0);
  return r;
};

beforeAll(async () => {
  worker = await LocalWorker.create();
  token = (await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: "cli-config" } })).token;
  functionId = (await api(worker.url, token).json("POST", "/v1/function", 201, { json: { name: "configured", lang: "PY", type: "DOCKER" } })).id;
  // A deployed folder: its .gcfaas.json names the function, so commands run there need no --function.
  folder = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-cli-config-"));
  await fs.writeFile(path.join(folder, ".gcfaas.json"), JSON.stringify({ functionId, name: "configured", lang: "PY" }));
}, 300_000);

afterAll(async () => {
  await worker?.dispose();
  await fs.rm(folder, { recursive: true, force: true });
});

describe("gcfaas env", () => {
  it("sets (keeping the others), lists and unsets, in the function's folder or with --function", async () => {
    await ok(["env", "set", "API_URL=https://api.example.test", "EMPTY="], { cwd: folder });
    await ok(["env", "set", "-f", functionId, "REGION=eu=west"]);
    expect((await ok(["env", "list"], { cwd: folder })).stdout).toBe("API_URL=https://api.example.test\nEMPTY=\nREGION=eu=west\n");
    await ok(["env", "unset", "EMPTY", "--function", functionId]);
    expect((await ok(["env", "list", "--json"], { cwd: folder })).json()).toEqual({ API_URL: "https://api.example.test", REGION: "eu=west" });
  });

  it("refuses what is not NAME=VALUE, an unknown name to unset, and a reserved name, changing nothing", async () => {
    expect((await gc(["env", "set", "NOVALUE"], { cwd: folder })).code).toBe(2);
    expect((await gc(["env", "unset", "NEVER_SET"], { cwd: folder })).code).toBe(2);
    const reserved = await gc(["env", "set", "GCFAAS_X=1"], { cwd: folder });
    expect(reserved.code).toBe(1);
    expect(reserved.stderr).toContain("validation_failed");
    expect((await ok(["env", "list", "--json"], { cwd: folder })).json()).toEqual({ API_URL: "https://api.example.test", REGION: "eu=west" });
  });
});

describe("gcfaas secret", () => {
  it("sets from standard input, lists names only, deletes", async () => {
    await ok(["secret", "set", "STRIPE_KEY"], { cwd: folder, input: `${SECRET}\n` });
    const list = await ok(["secret", "list"], { cwd: folder });
    expect(list.stdout).toMatch(/UPDATED\s+NAME/);
    expect(list.stdout).toContain("STRIPE_KEY");
    expect(list.stdout).not.toContain(SECRET);
    expect((await ok(["secret", "list", "--json"], { cwd: folder })).json()).toEqual([{ name: "STRIPE_KEY", updatedAt: expect.stringMatching(/Z$/) }]);
    await ok(["secret", "delete", "STRIPE_KEY", "-f", functionId]);
    expect((await ok(["secret", "list", "--json"], { cwd: folder })).json()).toEqual([]);
  });

  it("takes the value from standard input only: an extra argument is refused, an empty input too", async () => {
    expect((await gc(["secret", "set", "STRIPE_KEY", SECRET], { cwd: folder, input: "" })).code).toBe(2);
    expect((await gc(["secret", "set", "STRIPE_KEY"], { cwd: folder, input: "" })).code).toBe(2);
    const taken = await gc(["secret", "set", "API_URL"], { cwd: folder, input: SECRET });
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain("name_taken");
    expect(`${taken.stdout}${taken.stderr}`).not.toContain(SECRET);
    expect((await ok(["secret", "list", "--json"], { cwd: folder })).json()).toEqual([]);
  });
});
