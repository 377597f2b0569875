import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, api, LocalWorker, type Api } from "../e2e/harness.js";
import { runCli, show } from "./run-cli.js";

// `gcfaas retry` and `gcfaas concurrency` against a local Worker (no agent: they only set policy).
let worker: LocalWorker;
let token: string;
let user: Api;
let fn: string;
let dl: string;

const gc = (args: string[]) => runCli(args, { env: { GCFAAS_URL: worker.url, GCFAAS_TOKEN: token, GCFAAS_CONFIG: "/nonexistent/gcfaas.json" } });
const ok = async (args: string[]) => {
  const r = await gc(args);
  expect(r.code, `gcfaas ${args.join(" ")}\n${show(r)}`).toBe(0);
  return r;
};
const newFunction = async (name: string) => (await user.json("POST", "/v1/function", 201, { json: { name, lang: "PY", type: "DOCKER" } })).id as string;

beforeAll(async () => {
  worker = await LocalWorker.create();
  ({ token } = await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: "cli-retry" } }));
  user = api(worker.url, token);
  fn = await newFunction("orders");
  dl = await newFunction("failures");
}, 600_000);

afterAll(() => worker?.dispose());

describe("gcfaas retry", () => {
  it("shows the defaults, then changes only the options given", async () => {
    expect((await ok(["retry", fn, "--json"])).json()).toEqual({ maxAttempts: 1, backoffSeconds: 10, deadLetterFunctionId: null });
    expect((await ok(["retry", fn, "--attempts", "3", "--dead-letter", "failures"])).stdout).toMatch(new RegExp(`^dead letter:\\s+${dl}$`, "m"));
    expect(await user.json("GET", `/v1/function/${fn}/retry`, 200)).toEqual({ maxAttempts: 3, backoffSeconds: 10, deadLetterFunctionId: dl });
    await ok(["retry", fn, "--backoff", "60", "--no-dead-letter"]);
    expect(await user.json("GET", `/v1/function/${fn}/retry`, 200)).toEqual({ maxAttempts: 3, backoffSeconds: 60, deadLetterFunctionId: null });
  });

  it("refuses contradictory options before calling, and shows the service's refusal of a value out of range", async () => {
    const usage = await gc(["retry", fn, "--dead-letter", dl, "--no-dead-letter"]);
    expect(usage.code, show(usage)).toBe(2);
    const refused = await gc(["retry", fn, "--attempts", "9"]);
    expect(refused.code, show(refused)).toBe(1);
    expect(refused.stderr).toContain("maxAttempts");
  });
});

describe("gcfaas concurrency", () => {
  it("sets, shows and removes the cap", async () => {
    expect((await ok(["concurrency", fn, "--json"])).json()).toEqual({ max: null });
    await ok(["concurrency", fn, "3"]);
    expect((await ok(["concurrency", fn])).stdout).toMatch(/^max:\s+3 at once$/m);
    expect(await user.json("GET", `/v1/function/${fn}/concurrency`, 200)).toEqual({ max: 3 });
    await ok(["concurrency", fn, "--none"]);
    expect(await user.json("GET", `/v1/function/${fn}/concurrency`, 200)).toEqual({ max: null });
  });

  it("refuses a max that is not an integer before calling", async () => {
    const usage = await gc(["concurrency", fn, "three"]);
    expect(usage.code, show(usage)).toBe(2);
    expect(usage.stderr).toContain("<max> must be an integer");
  });
});
