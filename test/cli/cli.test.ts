import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker } from "../e2e/harness.js";
import { runCli, show, type CliOptions } from "./run-cli.js";

// One Worker on local workerd and one agent for the file; the CLI runs as a child process
// against them, configured only through its own config file (written by `gcfaas login`).
let worker: LocalWorker;
let agent: AgentProcess;
let token: string;
let tmp: string;
let configFile: string;

/** `gcfaas` with the stored login of this suite, from inside the temporary folder. */
const gc = (args: string[], o: CliOptions = {}) => runCli(args, { cwd: tmp, ...o, env: { GCFAAS_CONFIG: configFile, ...o.env } });

beforeAll(async () => {
  await ensureOfflineImages(["py", "js", "go"]);
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-cli-"));
  configFile = path.join(tmp, "config", "gcfaas.json");
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  token = (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "cli" } })).token;
  agent = await AgentProcess.start(worker, await worker.agentToken("agent-cli"), "agent-cli", ["--slots", "4"]);
}, 900_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
  if (tmp) await fs.rm(tmp, { recursive: true, force: true });
});

describe("login", () => {
  it("refuses a token the service does not know, and stores nothing", async () => {
    const r = await gc(["login", "--url", worker.url, "--token", "not-a-token"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/^error: unauthorized: \S.*/m);
    await expect(fs.stat(configFile)).rejects.toThrow();
    const none = await gc(["list"]);
    expect(none.code, show(none)).toBe(2);
    expect(none.stderr).toContain("error: not_logged_in:");
  });

  it("stores the URL and token, readable by the owner only, and later commands use them", async () => {
    const r = await gc(["login", "--url", `${worker.url}/`, "--token", token]);
    expect(r.code, show(r)).toBe(0);
    expect(JSON.parse(await fs.readFile(configFile, "utf8"))).toEqual({ url: worker.url, token });
    expect((await fs.stat(configFile)).mode & 0o777).toBe(0o600);

    const list = await gc(["list", "--json"]);
    expect(list.code, show(list)).toBe(0);
    expect(list.json()).toEqual([]);
    const cfg = await gc(["config", "--json"]);
    expect(cfg.json()).toMatchObject({ url: worker.url, urlSource: configFile, tokenSource: configFile });
    expect(cfg.stdout).not.toContain(token);
  });

  it("lets GCFAAS_TOKEN and --token override the stored token", async () => {
    const env = await gc(["list"], { env: { GCFAAS_TOKEN: "wrong" } });
    expect(env.code, show(env)).toBe(1);
    expect(env.stderr).toContain("error: unauthorized:");
    const flag = await gc(["tags", "list", "--token", "wrong"]);
    expect(flag.code, show(flag)).toBe(1);
    const both = await gc(["tags", "list", "--json", "--token", token], { env: { GCFAAS_TOKEN: "wrong" } });
    expect(both.code, show(both)).toBe(0);
  });
});

describe.each([
  { lang: "py", file: "handler.py" },
  { lang: "js", file: "handler.js" },
  { lang: "go", file: "handler.go" },
])("$lang: init, deploy, invoke", ({ lang, file }) => {
  const dir = () => path.join(tmp, `hello-${lang}`);

  it("init writes the template and the project file", async () => {
    const r = await gc(["init", `hello-${lang}`, "--lang", lang]);
    expect(r.code, show(r)).toBe(0);
    await fs.access(path.join(dir(), file));
    expect(JSON.parse(await fs.readFile(path.join(dir(), ".gcfaas.json"), "utf8"))).toEqual({ name: `hello${lang}`, lang });
    const again = await gc(["init", `hello-${lang}`, "--lang", lang]);
    expect(again.code, show(again)).toBe(2);
  });

  it("deploy creates the function, follows the build to SUCCESS and remembers the id", async () => {
    const r = await gc(["deploy", `hello-${lang}`]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stderr).toMatch(/build \w+: SUCCESS after/);
    expect(r.stderr).toContain("[build] unpacking zip"); // the build log, line by line
    const project = JSON.parse(await fs.readFile(path.join(dir(), ".gcfaas.json"), "utf8"));
    expect(project).toMatchObject({ functionId: expect.stringMatching(/^[a-z0-9]+$/), lang });
    const fn = (await gc(["get", project.functionId, "--json"])).json();
    expect(fn).toMatchObject({ id: project.functionId, name: `hello${lang}`, lang });
  });

  it("invoke runs it with the body and query and prints the function's answer", async () => {
    const r = await gc(["invoke", `hello-${lang}`, "--query", "name=CLI", "--data", '{"n": 7}', "--json"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.json()).toMatchObject({ status: 200, contentType: expect.stringContaining("json"), body: { message: "Hello, CLI!", method: "POST", received: { n: 7 } } });
    const human = await gc(["invoke", `hello-${lang}`, "-q", "name=Human"]);
    expect(human.code, show(human)).toBe(0);
    expect(JSON.parse(human.stdout)).toMatchObject({ message: "Hello, Human!" });
    expect(human.stderr).toMatch(/task \w+: 200 ok/);
    // One synchronous call (Prefer: wait), not create-then-poll.
    expect(human.stderr).not.toContain("waiting for its result");
  });
});

describe("deploy again", () => {
  it("updates the same function with a new build", async () => {
    const project = JSON.parse(await fs.readFile(path.join(tmp, "hello-py/.gcfaas.json"), "utf8"));
    const handler = path.join(tmp, "hello-py/handler.py");
    await fs.writeFile(handler, (await fs.readFile(handler, "utf8")).replace("Hello, ", "Hi, "));
    const r = await gc(["deploy", "hello-py", "--json"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.json()).toMatchObject({ functionId: project.functionId, status: "SUCCESS" });
    expect((await gc(["list", "--json"])).json()).toHaveLength(3);
    const builds = (await gc(["builds", "--function", "hello-py", "--json"])).json();
    expect(builds).toMatchObject({ totalCount: 2 });
    const out = await gc(["invoke", project.functionId, "-q", "name=again"]);
    expect(JSON.parse(out.stdout).message).toBe("Hi, again!");
  });

  it("exits 1 with the build log when the build FAILED", async () => {
    const bad = path.join(tmp, "broken");
    await fs.mkdir(bad);
    await fs.writeFile(path.join(bad, "handler.py"), "def handle(:\n");
    const r = await gc(["deploy", "broken", "--lang", "py", "--keep-failed"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("SyntaxError");
    expect(r.stderr).toMatch(/^error: build_failed: .*FAILED/m);
  });
});

describe("API errors", () => {
  it("invoke of an unknown function exits 1 with the error's code and message", async () => {
    const r = await gc(["invoke", "nosuchfunction"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/^error: not_found: no function has the id or name nosuchfunction$/m);
    const j = await gc(["invoke", "nosuchfunction", "--json"]);
    expect(j.code).toBe(1);
    expect(j.json()).toEqual({ error: { code: "not_found", message: "no function has the id or name nosuchfunction" } });
  });

  it("capabilities out of bounds exits 1 with the validation details", async () => {
    const r = await gc(["capabilities", "hello-py", "--timeout", "5"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/^error: validation_failed: timeout must be an integer from 10 to 120/m);
    expect(r.stderr).toMatch(/^ {2}- timeout: must be an integer from 10 to 120/m);
  });

  it("a task that crashed exits 1 and still prints the function's answer", async () => {
    const r = await gc(["invoke", "hello-py", "-q", "fail=1"]);
    expect(r.code, show(r)).toBe(1);
    expect(JSON.parse(r.stdout).error).toContain("boom");
    expect(r.stderr).toContain("error: task_failed:");
  });

  it("a task of a function without a successful build is refused", async () => {
    const r = await gc(["invoke", "broken"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/^error: no_successful_build: /m);
  });

  it("an unreachable service is a connection error, not a crash", async () => {
    const r = await gc(["list"], { env: { GCFAAS_URL: "http://127.0.0.1:9" } });
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/^error: connection_failed: cannot reach http:\/\/127\.0\.0\.1:9/m);
  });
});

describe("--json", () => {
  it("prints parseable JSON for every command", async () => {
    const ok = async (args: string[]) => {
      const r = await gc([...args, "--json"]);
      expect(r.code, `gcfaas ${args.join(" ")}\n${show(r)}`).toBe(0);
      return r.json();
    };
    const fnId: string = JSON.parse(await fs.readFile(path.join(tmp, "hello-js/.gcfaas.json"), "utf8")).functionId;
    const goId: string = JSON.parse(await fs.readFile(path.join(tmp, "hello-go/.gcfaas.json"), "utf8")).functionId;

    expect(await ok(["config"])).toHaveProperty("url");
    expect(await ok(["init", "json-fn", "--lang", "py"])).toMatchObject({ lang: "py", files: expect.arrayContaining(["handler.py"]) });
    const build = await ok(["deploy", "json-fn"]);
    expect(build).toMatchObject({ status: "SUCCESS", log: expect.any(Array), timeline: expect.any(Array) });
    const jsonFnId: string = build.functionId;
    expect(await ok(["build", build.id])).toMatchObject({ id: build.id, status: "SUCCESS" });
    const whole = await ok(["build", build.id, "--log"]);
    expect(whole).toEqual({ id: build.id, log: `${build.log.join("\n")}\n` });
    const text = await gc(["build", build.id, "--log"]);
    expect([text.code, text.stdout], show(text)).toEqual([0, whole.log]);
    expect(await ok(["builds", "--function", jsonFnId])).toMatchObject({ totalCount: 1, results: [{ id: build.id }] });
    expect(await ok(["list"])).toEqual(expect.arrayContaining([expect.objectContaining({ id: jsonFnId })]));
    expect(await ok(["get", jsonFnId])).toMatchObject({ id: jsonFnId, capabilities: { timeout: 30 } });
    expect(await ok(["edit", jsonFnId, "--description", "made by the CLI test"])).toMatchObject({ description: "made by the CLI test" });

    const noWait = await ok(["invoke", jsonFnId, "--no-wait"]);
    expect(noWait).toEqual({ id: expect.any(String) });
    const invoked = await ok(["invoke", jsonFnId, "-q", "name=json"]);
    expect(await ok(["result", invoked.id])).toMatchObject({ id: invoked.id, status: 200, body: { message: "Hello, json!" } });
    expect(await ok(["logs", invoked.id])).toMatchObject({ id: invoked.id, finished: true, log: expect.arrayContaining([expect.stringContaining("greeting json")]) });
    expect(await ok(["task", invoked.id])).toMatchObject({ status: 200, progress: 100, functionId: jsonFnId });
    expect(await ok(["tasks", "--function", jsonFnId])).toEqual(expect.arrayContaining([expect.objectContaining({ id: invoked.id })]));

    // --idempotency-key: the same call again is the first call's task; another call under the key is refused.
    const once = await ok(["invoke", jsonFnId, "-q", "name=once", "--idempotency-key", "cli-order-1"]);
    const again = await gc(["invoke", jsonFnId, "-q", "name=once", "--idempotency-key", "cli-order-1", "--json"]);
    expect([again.code, again.json().id], show(again)).toEqual([0, once.id]);
    const told = await gc(["invoke", jsonFnId, "-q", "name=once", "--idempotency-key", "cli-order-1"]);
    expect([told.code, told.stderr], show(told)).toEqual([0, expect.stringContaining("this is that call's task")]);
    const other = await gc(["invoke", jsonFnId, "-q", "name=other", "--idempotency-key", "cli-order-1"]);
    expect([other.code, other.stderr], show(other)).toEqual([1, expect.stringContaining("idempotency_conflict")]);
    expect((await gc(["invoke", jsonFnId, "--idempotency-key", "caf\u00e9"])).code).toBe(2);

    expect(await ok(["capabilities", jsonFnId])).toMatchObject({ timeout: 30, privileged: false });
    expect(await ok(["capabilities", jsonFnId, "--timeout", "60", "--cpu", "0.5", "--memory", "512", "--privileged", "false"])).toMatchObject({ timeout: 60, cpuCount: 0.5, memSize: 512 });
    expect(await ok(["pause", jsonFnId])).toEqual({ id: jsonFnId, paused: true, changed: true });
    expect(await ok(["pause", jsonFnId])).toEqual({ id: jsonFnId, paused: true, changed: false });
    expect(await ok(["resume", jsonFnId])).toEqual({ id: jsonFnId, paused: false, changed: true });

    const tag = await ok(["tags", "create", "cli test", "--color", "#AA0000"]);
    expect(await ok(["tags", "edit", tag.id, "--name", "cli"])).toEqual({ id: tag.id, name: "cli", color: "#aa0000" });
    expect(await ok(["tags", "list"])).toEqual([{ id: tag.id, name: "cli", color: "#aa0000" }]);

    const trigger = await ok(["triggers", "create", "--function", fnId, "--next", goId, "--include-result", "--tag", tag.id]);
    expect(await ok(["triggers", "get", trigger.id])).toMatchObject({ functionId: fnId, nextId: goId, status: 200, includeResult: true });
    expect(await ok(["triggers", "edit", trigger.id, "--status", "404", "--no-include-result"])).toMatchObject({ status: 404, includeResult: false });
    expect(await ok(["triggers", "list", "--function", fnId])).toMatchObject({ totalCount: 1, results: [{ id: trigger.id }] });
    expect(await ok(["triggers", "delete", trigger.id])).toEqual({ id: trigger.id, deleted: true });

    const ep = await ok(["endpoints", "create", jsonFnId, "--daily-limit", "5", "--origin", "https://example.com", "--from", "00:00", "--to", "00:00"]);
    expect(await ok(["endpoints", "get", ep.id])).toMatchObject({ functionId: jsonFnId, dailyLimit: 5, origin: ["https://example.com"], timeLimit: { from: "00:00", to: "00:00", timezone: "UTC" } });
    expect(await ok(["endpoints", "edit", ep.id, "--daily-limit", "-1", "--no-origin", "--no-time-limit"])).toMatchObject({ dailyLimit: -1, origin: [], timeLimit: null });
    const called = await fetch(`${worker.url}/gc/${ep.id}`, { method: "POST" });
    expect(called.status).toBe(201);
    expect(await ok(["endpoints", "metrics", ep.id])).toMatchObject({ todayTasks: 1, weekTasks: 1 });
    expect(await ok(["endpoints", "list", "--function", jsonFnId])).toMatchObject({ totalCount: 1, results: [{ id: ep.id }] });
    expect(await ok(["endpoints", "delete", ep.id])).toEqual({ id: ep.id, deleted: true });
    expect(await ok(["tags", "delete", tag.id])).toEqual({ id: tag.id, deleted: true });

    expect(await ok(["delete", "json-fn", "--yes"])).toEqual({ id: jsonFnId, deleted: true });
    expect(JSON.parse(await fs.readFile(path.join(tmp, "json-fn/.gcfaas.json"), "utf8"))).not.toHaveProperty("functionId");
    expect(await ok(["logout"])).toMatchObject({ removed: true });
    await expect(fs.stat(configFile)).rejects.toThrow();
  });
});
