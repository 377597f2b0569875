import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { localStack, type AgentProcess, type Api, type LocalWorker } from "../e2e/harness.js";
import { asUser, show, stopSuite } from "./run-cli.js";

// `gcfaas up` against a Worker on local workerd and a Python agent: the file is the truth, a second
// run changes nothing, an edit changes only what was edited.
let worker: LocalWorker;
let agent: AgentProcess;
let token: string;
let user: Api;
let tmp: string;

const { gc, ok } = asUser(() => worker.url, () => token, () => tmp);

// The greeting reads a variable and a secret: a call shows both arrived.
const GREETER = `import os

def handle(event, context):
    return {"greeting": os.environ.get("GREETING"), "key": os.environ.get("API_KEY"), "version": 1}
`;
const NOTIFY = "def handle(event, context):\n    return {'notified': True}\n";

const STACK = `# two functions, what hangs off them; both Python through a merge key
x-python: &python
  lang: py
functions:
  greeter:
    <<: *python
    description: says hello
    capabilities:
      timeout: 20
      memSize: 128
    env:
      GREETING: hello
    secrets: [API_KEY]
    endpoints:
      public:
        dailyLimit: 100
    schedules:
      nightly:
        cron: "0 3 * * *"
        timezone: Europe/Paris
    triggers:
      - next: notify
        includeResult: true
  notify:
    <<: *python
    folder: ./notify
`;

interface UpChange {
  verb: string;
  kind: string;
  function: string;
  key?: string;
  id?: string;
  detail?: string;
}
const up = async (args: string[] = [], env: Record<string, string> = { API_KEY: "k-1" }) => (await ok(["up", "--json", ...args], { env })).json<{ changes: UpChange[] }>().changes;
const verbs = (changes: UpChange[]) => changes.map((c) => `${c.verb} ${c.kind} ${c.function}${c.key ? `/${c.key}` : ""}`);
const fnId = async (name: string): Promise<string> => ((await user.json("GET", "/v1/function/list", 200)) as { id: string; name: string }[]).find((f) => f.name === name)!.id;
const buildCount = async (name: string): Promise<number> => (await user.json("GET", `/v1/build/list?functionId=${await fnId(name)}&limit=100`, 200)).totalCount;

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-stack-"));
  ({ worker, agent, token, user } = await localStack({ account: "stack", nodeId: "agent-stack", agentArgs: ["--slots", "4", "--langs", "py"] }));
  await fs.mkdir(path.join(tmp, "greeter"));
  await fs.mkdir(path.join(tmp, "notify"));
  await fs.writeFile(path.join(tmp, "greeter", "handler.py"), GREETER);
  await fs.writeFile(path.join(tmp, "notify", "handler.py"), NOTIFY);
  await fs.writeFile(path.join(tmp, "gcfaas.yml"), STACK);
}, 900_000);

afterAll(() => stopSuite(agent, worker, tmp));

describe("up --dry-run", () => {
  it("prints the plan and changes nothing", async () => {
    const r = await ok(["up", "--dry-run"], { env: { API_KEY: "k-1" } });
    expect(r.stdout).toMatch(/^create\s+function greeter: Python$/m);
    expect(r.stdout).toMatch(/^create\s+endpoint greeter\/public$/m);
    expect(r.stdout).toMatch(/^dry run, nothing changed: /m);
    expect(await user.json("GET", "/v1/function/list", 200)).toEqual([]);
  });
});

describe("up", () => {
  it("refuses a file with a mistake, naming its line and field, and changes nothing", async () => {
    await fs.writeFile(path.join(tmp, "bad.yml"), STACK.replace("timeout: 20", "timeout: 5").replace("memSize: 128", "memsize: 128"));
    const r = await gc(["up", "-f", "bad.yml"], { env: { API_KEY: "k-1" } });
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain("error: invalid_stack_file: bad.yml has 2 mistakes; nothing was changed");
    expect(r.stderr).toContain("  - bad.yml:9 functions.greeter.capabilities.timeout: must be an integer from 10 to 120 (seconds)");
    expect(r.stderr).toContain("  - bad.yml:10 functions.greeter.capabilities.memsize: unknown field (check its spelling)");
    expect(await user.json("GET", "/v1/function/list", 200)).toEqual([]);
  });

  it("needs each new secret's value in the environment, and changes nothing without it", async () => {
    const r = await gc(["up"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("error: stack_not_applied:");
    expect(r.stderr).toContain("secret API_KEY is not on the service yet and $API_KEY is not set");
    expect(await user.json("GET", "/v1/function/list", 200)).toEqual([]);
  });

  it("first creates everything the file declares, and the function answers with its variable and secret", async () => {
    const changes = await up();
    expect(verbs(changes)).toEqual([
      "create function greeter",
      "create build greeter",
      "update capabilities greeter",
      "update env greeter",
      "create secret greeter/API_KEY",
      "create endpoint greeter/public",
      "create schedule greeter/nightly",
      "create function notify",
      "create build notify",
      "create trigger greeter/notify/200",
    ]);
    const greeter = await fnId("greeter");
    const notify = await fnId("notify");
    const fn = await user.json("GET", `/v1/function/${greeter}`, 200);
    expect(fn).toMatchObject({ description: "says hello", capabilities: { timeout: 20, memSize: 128 } });
    const endpoints = (await user.json("GET", `/v1/endpoint/list?functionId=${greeter}`, 200)).results;
    expect(endpoints).toHaveLength(1);
    expect(await user.json("GET", `/v1/endpoint/${endpoints[0].id}`, 200)).toMatchObject({ description: "gcfaas.yml:public", dailyLimit: 100 });
    expect((await user.json("GET", `/v1/scheduled/list?functionId=${greeter}`, 200)).results).toMatchObject([{ cron: "0 3 * * *", timezone: "Europe/Paris", active: true }]);
    expect((await user.json("GET", `/v1/trigger/list?functionId=${greeter}`, 200)).results).toMatchObject([{ nextId: notify, status: 200, includeResult: true }]);
    // The folder remembers its function, so the other commands take it too.
    expect(JSON.parse(await fs.readFile(path.join(tmp, "greeter", ".gcfaas.json"), "utf8"))).toMatchObject({ functionId: greeter, name: "greeter", lang: "py" });
    const call = await ok(["invoke", "./greeter", "--json"]);
    expect(call.json()).toMatchObject({ status: 200, body: { greeting: "hello", key: "k-1", version: 1 } });
  });

  it("a second time changes nothing and says so, without rebuilding", async () => {
    const r = await ok(["up"], { env: { API_KEY: "k-1" } });
    expect(r.stdout).toMatch(/^unchanged\s+build of greeter: \.\/greeter is as built in \w+$/m);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("nothing to change (10 unchanged)");
    expect(await buildCount("greeter")).toBe(1);
    expect(await buildCount("notify")).toBe(1);
  });

  it("after an edit changes only what was edited: the edited folder is rebuilt, the other is not", async () => {
    await fs.writeFile(path.join(tmp, "greeter", "handler.py"), GREETER.replace('"version": 1', '"version": 2'));
    await fs.writeFile(path.join(tmp, "gcfaas.yml"), STACK.replace("timeout: 20", "timeout: 40").replace("dailyLimit: 100", "dailyLimit: 50").replace("GREETING: hello", "GREETING: bonjour"));
    const changes = await up();
    expect(verbs(changes.filter((c) => c.verb !== "unchanged"))).toEqual(["rebuild build greeter", "update capabilities greeter", "update env greeter", "update endpoint greeter/public"]);
    expect(changes.find((c) => c.kind === "capabilities")?.detail).toBe("timeout 20 -> 40");
    expect(changes.find((c) => c.kind === "endpoint")?.detail).toBe("dailyLimit");
    expect(await buildCount("greeter")).toBe(2);
    expect(await buildCount("notify")).toBe(1);
    const call = await ok(["invoke", "greeter", "--json"]);
    expect(call.json()).toMatchObject({ body: { greeting: "bonjour", version: 2 } });
    // The endpoint was edited in place: its address did not change.
    expect((await user.json("GET", `/v1/endpoint/list?functionId=${await fnId("greeter")}`, 200)).totalCount).toBe(1);
  });
});

describe("deploy, then up", () => {
  it("up does not build again what a deploy of the folder just built", async () => {
    await ok(["deploy", "greeter"]);
    expect(await buildCount("greeter")).toBe(3);
    const changes = await up();
    expect(changes.find((c) => c.kind === "build" && c.function === "greeter")).toMatchObject({ verb: "unchanged" });
    expect(await buildCount("greeter")).toBe(3);
  });
});

describe("up --prune", () => {
  it("leaves what the file does not mention unless --prune, which deletes it but never a function", async () => {
    const greeter = await fnId("greeter");
    const extra = (await ok(["endpoints", "create", "greeter", "--json"])).json<{ id: string }>().id;
    await ok(["secret", "set", "OLD_KEY", "-f", "greeter"], { input: "x" });
    await ok(["init", "other", "--lang", "py"]);
    await ok(["deploy", "other"]);

    const left = await up();
    expect(verbs(left.filter((c) => c.verb === "leave"))).toEqual([`leave secret greeter/OLD_KEY`, `leave endpoint greeter/${extra}`, "leave function other"]);
    expect(left.every((c) => c.verb === "unchanged" || c.verb === "leave")).toBe(true);

    const pruned = await up(["--prune"]);
    expect(verbs(pruned.filter((c) => c.verb !== "unchanged"))).toEqual([`delete secret greeter/OLD_KEY`, `delete endpoint greeter/${extra}`, "leave function other"]);
    await user.json("GET", `/v1/endpoint/${extra}`, 404);
    expect((await user.json("GET", `/v1/function/${greeter}/secrets`, 200)).map((s: { name: string }) => s.name)).toEqual(["API_KEY"]);
    expect(await fnId("other")).toBeTruthy();
  });
});
