import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { zipItems } from "../support/zip.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker } from "../e2e/harness.js";
import { asUser, BIN, pathWithoutGcfaas, show, stopSuite } from "./run-cli.js";

// Issue #25's findings, as a newcomer meets them: one Worker, one agent serving Python (not
// privileged), and the CLI run as a child process from folders other than the function's.
let worker: LocalWorker;
let agent: AgentProcess;
let token: string;
let accountId: string;
let tmp: string;
let elsewhere: string;

const { gc, ok } = asUser(() => worker.url, () => token, () => elsewhere);
async function pyFolder(name: string, handler: string): Promise<string> {
  const dir = path.join(tmp, name);
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, "handler.py"), handler);
  return dir;
}
const idOf = async (dir: string): Promise<string> => JSON.parse(await fs.readFile(path.join(tmp, dir, ".gcfaas.json"), "utf8")).functionId;

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-newcomer-"));
  elsewhere = path.join(tmp, "elsewhere");
  await fs.mkdir(elsewhere);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  ({ token, accountId } = await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "newcomer" } }));
  agent = await AgentProcess.start(worker, await worker.agentToken("agent-newcomer"), "agent-newcomer", ["--slots", "4", "--langs", "py"]);
  await ok(["init", "hello-py", "--lang", "py"], { cwd: tmp });
  await ok(["deploy", "hello-py"], { cwd: tmp });
}, 900_000);

afterAll(() => stopSuite(agent, worker, tmp));

describe("init", () => {
  it("says which name the function gets when the folder's name is not one", async () => {
    const r = await ok(["init", "my-fn", "--lang", "py"], { cwd: tmp });
    expect(r.stdout).toContain('the function will be named myfn: names are 1 to 64 letters or digits, and "my-fn" is not one');
    // Not on the PATH here: the hint is the command that works from the repository.
    expect(r.stdout).toContain("next: npx gcfaas deploy my-fn");
  });
});

describe("names", () => {
  it("get, invoke and builds take a function's name from any folder", async () => {
    const id = await idOf("hello-py");
    expect((await ok(["get", "hellopy", "--json"])).json()).toMatchObject({ id, name: "hellopy" });
    expect((await ok(["invoke", "hellopy", "-q", "name=Name", "--json"])).json()).toMatchObject({ status: 200, body: { message: "Hello, Name!" } });
    expect((await ok(["builds", "--function", "hellopy", "--json"])).json()).toMatchObject({ totalCount: 1 });
  });

  it("tables of builds, endpoints, triggers and schedules show function names, not ids", async () => {
    const id = await idOf("hello-py");
    const builds = await ok(["builds"]);
    expect(builds.stdout).toMatch(/^\w+\s+hellopy\s+SUCCESS\s/m);
    expect(builds.stdout).not.toContain(id);
    // Status 599 never comes: the trigger exists for its row only.
    const trigger = (await ok(["triggers", "create", "--function", "hellopy", "--next", "hellopy", "--status", "599", "--json"])).json();
    expect((await ok(["triggers", "list"])).stdout).toMatch(/^\w+\s+hellopy\s+\d+\s+hellopy\b/m);
    expect((await ok(["triggers", "list", "--json"])).json().results[0]).toMatchObject({ functionId: id, nextId: id });
    await ok(["triggers", "delete", trigger.id]);
  });

  it("an unknown name is not_found with the command that lists functions", async () => {
    const r = await gc(["get", "nosuchname"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("error: not_found: no function has the id or name nosuchname");
    expect(r.stderr).toContain("hint: list your functions with `npx gcfaas list`");
  });

  it("deploying another folder of the same name updates that function, and says which", async () => {
    const id = await idOf("hello-py");
    await ok(["init", "copy", "--lang", "py", "--name", "hellopy"], { cwd: tmp });
    const r = await ok(["deploy", "copy"], { cwd: tmp });
    expect(r.stderr).toContain(`updating function hellopy (${id}`);
    expect(await idOf("copy")).toBe(id);
    expect((await ok(["list", "--json"])).json().filter((f: { name: string }) => f.name === "hellopy")).toHaveLength(1);
  });

  it("two functions of one name are an error listing both, with ids, languages and creation times", async () => {
    const first = await idOf("hello-py");
    await ok(["init", "second", "--lang", "py", "--name", "hellopy"], { cwd: tmp });
    const made = await ok(["deploy", "second", "--new"], { cwd: tmp });
    expect(made.stderr).toContain("created function hellopy");
    const second = await idOf("second");
    const r = await gc(["invoke", "hellopy"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("error: ambiguous_name: 2 functions are named hellopy");
    expect(r.stderr).toMatch(new RegExp(`^  - ${first}: hellopy, py, created \\d{4}-`, "m"));
    expect(r.stderr).toMatch(new RegExp(`^  - ${second}: hellopy, py, created \\d{4}-`, "m"));
    const again = await gc(["deploy", path.join(tmp, "my-fn"), "--name", "hellopy"]);
    expect(again.code, show(again)).toBe(1);
    expect(again.stderr).toContain("error: name_taken: 2 functions are named hellopy");
    await ok(["delete", second, "--yes"]);
    await ok(["get", "hellopy"]);
  });
});

describe("delete", () => {
  it("refuses without a terminal and without --yes, and deletes nothing", async () => {
    await ok(["init", "doomed", "--lang", "py"], { cwd: tmp });
    await ok(["deploy", "doomed", "--no-wait"], { cwd: tmp });
    const r = await gc(["delete", "doomed"]);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain("stdin is not a terminal; add --yes");
    await ok(["get", "doomed"]);
    expect((await ok(["delete", "doomed", "--yes", "--json"])).json()).toEqual({ id: expect.any(String), deleted: true });
    expect((await gc(["get", "doomed"])).code).toBe(1);
  });
});

/** `gcfaas <args>` on a terminal (a pty from util-linux `script`), typing `input`. */
function onTerminal(args: string[], input: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const line = [process.execPath, BIN, ...args].map((w) => `'${w}'`).join(" ");
    const env = { PATH: pathWithoutGcfaas(), HOME: tmp, GCFAAS_URL: worker.url, GCFAAS_TOKEN: token, GCFAAS_CONFIG: "/nonexistent/gcfaas.json" };
    const child = spawn("script", ["-qec", line, "/dev/null"], { cwd: elsewhere, env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
    child.stdin.end(input);
  });
}

describe("delete on a terminal", () => {
  it("asks, and deletes only on yes", async () => {
    await ok(["init", "asked", "--lang", "py"], { cwd: tmp });
    await ok(["deploy", "asked", "--no-wait"], { cwd: tmp });
    const id = await idOf("asked");
    const no = await onTerminal(["delete", "asked"], "n\n");
    expect(no.out).toContain(`delete function asked (${id}, py) with its builds, triggers and endpoints? [y/N]`);
    expect(no.out).toContain("nothing deleted");
    await ok(["get", id]);
    const yes = await onTerminal(["delete", "asked"], "y\n");
    expect(yes.out).toContain(`deleted function ${id}`);
    expect((await gc(["get", id])).code).toBe(1);
  });
});

describe("pause and resume", () => {
  it("are idempotent, and invoke of a paused function says so at once", async () => {
    const id = await idOf("hello-py");
    expect((await ok(["pause", "hellopy", "--json"])).json()).toEqual({ id, paused: true, changed: true });
    const twice = await ok(["pause", "hellopy"]);
    expect(twice.stdout).toContain("was already paused; nothing changed");
    const r = await gc(["invoke", "hellopy"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("error: function_paused: function hellopy");
    expect(r.stderr).toContain("hint: resume it with `npx gcfaas resume hellopy`");
    expect(r.stderr).not.toContain("waiting");
    expect((await ok(["resume", "hellopy", "--json"])).json()).toEqual({ id, paused: false, changed: true });
    expect((await ok(["resume", "hellopy", "--json"])).json()).toEqual({ id, paused: false, changed: false });
    await ok(["invoke", "hellopy"]);
  });
});

describe("invoke", () => {
  it("sends any body with --data-binary and --content-type, and shows the status and the function's headers with -i", async () => {
    await fs.writeFile(path.join(elsewhere, "body.json"), '{"from": "file"}');
    const r = await ok(["invoke", "hellopy", "--data-binary", "@body.json", "--content-type", "application/json", "-i", "-q", "name=Head"]);
    expect(r.stdout).toMatch(/^status: 200$/m);
    expect(r.stdout).toMatch(/^x-task-id: \w+$/m);
    expect(r.stdout).toMatch(/^content-type: application\/json/m);
    // The function's own header (hello sets X-Greeting), which the result alone does not carry.
    expect(r.stdout).toMatch(/^x-greeting: Head$/m);
    expect(JSON.parse(r.stdout.slice(r.stdout.indexOf("\n\n") + 2))).toMatchObject({ received: { from: "file" } });
    const stdin = await ok(["invoke", "hellopy", "--data-binary", "-", "--content-type", "application/json", "--json"], { input: "[1, 2]" });
    expect(stdin.json()).toMatchObject({ body: { received: [1, 2] } });
    const text = await gc(["invoke", "hellopy", "--data", "plain words"]);
    expect(text.code, show(text)).toBe(2);
    expect(text.stderr).toContain("send other bodies with --data-binary and --content-type");
  });

  it("--max-wait N gives up after N seconds in all", async () => {
    await pyFolder("slow", "import time\n\ndef handle(event, context):\n    time.sleep(8)\n    return {'statusCode': 200, 'body': 'late'}\n");
    await ok(["deploy", "slow", "--lang", "py"], { cwd: tmp });
    // The function answers after 8 s: a wait of 2 x 5 s would have read its answer.
    const r = await gc(["invoke", "slow", "--max-wait", "5"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/^error: wait_timeout: task \w+ has not finished after 5s/m);
    expect(r.stderr).toMatch(/hint: read it later with `npx gcfaas result \w+`/);
  });

  it("a function without a successful build is said at once, with the command to run, never an HTTP route", async () => {
    await pyFolder("broken", "def handle(:\n");
    const kept = await gc(["deploy", "broken", "--lang", "py", "--keep-failed"], { cwd: tmp });
    expect(kept.code, show(kept)).toBe(1);
    expect(kept.stderr).toContain("hint: fix the error above, then deploy again with `npx gcfaas deploy broken`");
    const r = await gc(["invoke", "broken"], { cwd: tmp });
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("error: no_successful_build: function broken has no successful build yet");
    expect(r.stderr).toContain("hint: deploy it with `npx gcfaas deploy <folder>`; see why its last build failed with `npx gcfaas builds --function broken`");
    expect(r.stderr).not.toContain("/v1/");
  });

  it("a function whose first build is still waiting says so, with the command to follow it", async () => {
    // The agent serves Python only: a Node.js build waits for a node that serves Node.js.
    await ok(["init", "waiting", "--lang", "js"], { cwd: tmp });
    await ok(["deploy", "waiting", "--no-wait"], { cwd: tmp });
    const build = (await ok(["builds", "--function", "waiting", "--json"])).json().results[0];
    expect(build.status).toBe("PENDING");
    const r = await gc(["invoke", "waiting"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("error: no_successful_build: function waiting has no successful build yet");
    expect(r.stderr).toContain(`hint: its build ${build.id} is PENDING; wait for it with \`npx gcfaas build ${build.id} --follow\`, then invoke again`);
  });

  it("a task no node can take is said at once (503, no_suitable_node)", async () => {
    await api(worker.url, ADMIN_TOKEN).json("PATCH", `/v1/admin/accounts/${accountId}`, 204, { json: { privileged: true } });
    await ok(["capabilities", "hellopy", "--privileged", "true"]);
    const r = await gc(["invoke", "hellopy"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/^error: no_suitable_node: the task did not run: no node .* allows privileged work/m);
    expect(r.stderr).toContain("hint: no connected node can run this function");
    await ok(["capabilities", "hellopy", "--privileged", "false"]);
  });

  it("a handler that fails to load points at the task's log", async () => {
    await pyFolder("badimport", "import nosuchmodule\n\ndef handle(event, context):\n    return {}\n");
    await ok(["deploy", "badimport", "--lang", "py"], { cwd: tmp });
    const r = await gc(["invoke", "badimport"]);
    expect(r.code, show(r)).toBe(1);
    const task = /task (\w+): 500/.exec(r.stderr)?.[1];
    expect(task, show(r)).toBeDefined();
    expect(r.stderr).toContain(`see what it printed with \`npx gcfaas logs ${task}\``);
    expect((await ok(["logs", task!])).stdout).toContain("ModuleNotFoundError");
  });
});

describe("deploy", () => {
  it("a failed first deploy removes the function it created, and says so", async () => {
    await pyFolder("failsfirst", "def handle(:\n");
    const r = await gc(["deploy", "failsfirst", "--lang", "py"], { cwd: tmp });
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/^removed function failsfirst \(\w+\) again: this deploy created it and it has no successful build/m);
    expect((await ok(["list", "--json"])).json().map((f: { name: string }) => f.name)).not.toContain("failsfirst");
    expect(JSON.parse(await fs.readFile(path.join(tmp, "failsfirst/.gcfaas.json"), "utf8"))).not.toHaveProperty("functionId");
  });

  it("a folder whose handler is one level down names the folder to deploy", async () => {
    await pyFolder("outer/hello", "def handle(event, context):\n    return {}\n");
    const r = await gc(["deploy", "outer", "--lang", "py"], { cwd: tmp });
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain("found hello/handler.py: deploy that folder (`npx gcfaas deploy outer/hello`)");
  });
});

describe("a zip of the folder instead of its contents", () => {
  it("a folder without its handler is refused before anything is created", async () => {
    const dir = path.join(tmp, "nohandler");
    await fs.mkdir(dir);
    await fs.writeFile(path.join(dir, "main.py"), "print('hi')\n");
    const r = await gc(["deploy", "nohandler", "--lang", "py"], { cwd: tmp });
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain("error: usage: nohandler has no handler.py: a Python function needs it at the top level of its folder");
    expect((await ok(["list", "--json"])).json().map((f: { name: string }) => f.name)).not.toContain("nohandler");
  });

  it("a build of such a zip says to zip the folder's contents", async () => {
    const owner = api(worker.url, token);
    const { id: fn } = await owner.json("POST", "/v1/function", 201, { json: { name: "zipped", lang: "PY", type: "DOCKER" } });
    const zip = await zipItems([{ name: "hello/handler.py", data: "def handle(event, context):\n    return {}\n" }]);
    const { id: build } = await owner.json("POST", `/v1/build/${fn}?arch=amd64`, 201, { body: zip, headers: { "content-type": "application/octet-stream" } });
    const r = await gc(["build", build, "--follow"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("handler.py not found at the top level of the zip");
    expect(r.stderr).toContain("hint: the zip must hold the function folder's contents, not the folder: zip from inside it");
  });
});

describe("login", () => {
  it("says a wrong token is unknown, and that the admin token is for operator commands only", async () => {
    const env = { GCFAAS_URL: undefined, GCFAAS_TOKEN: undefined, GCFAAS_CONFIG: path.join(tmp, "login.json") };
    const wrong = await gc(["login", "--url", worker.url, "--token", "not-a-token"], { env });
    expect(wrong.code, show(wrong)).toBe(1);
    expect(wrong.stderr).toContain(`error: unauthorized: the service at ${worker.url} does not know this token; nothing was stored`);
    const admin = await gc(["login", "--url", worker.url, "--token", ADMIN_TOKEN], { env });
    expect(admin.code, show(admin)).toBe(1);
    expect(admin.stderr).toContain("error: admin_token: this is the operator's admin token: it is for operator commands only");
  });
});

describe("endpoints create", () => {
  it("with --ip prints the curl command with a note that it works only from those addresses", async () => {
    const r = await ok(["endpoints", "create", "hellopy", "--ip", "203.0.113.7"]);
    expect(r.stdout).toMatch(/^call it: curl -X POST http:\/\/\S+\/gc\/\w+$/m);
    expect(r.stdout).toContain("note: this endpoint answers only callers from 203.0.113.7; the curl above works only from there");
  });
});
