import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, api, LocalWorker } from "../e2e/harness.js";
import { asOperator, runCli, show } from "./run-cli.js";

// `gcfaas network` (a function's egress) as its owner, and `gcfaas accounts grant --egress` as the
// operator, against a local Worker. No agent: nothing here runs a function.
let worker: LocalWorker;
let accountId: string;
let token: string;
let fn: string;

const operator = asOperator(() => worker.url);
const gc = (args: string[]) => runCli(args, { env: { GCFAAS_URL: worker.url, GCFAAS_TOKEN: token, GCFAAS_CONFIG: "/nonexistent/gcfaas.json" } });
const ok = async (args: string[]) => {
  const r = await gc(args);
  expect(r.code, `gcfaas ${args.join(" ")}\n${show(r)}`).toBe(0);
  return r;
};

beforeAll(async () => {
  worker = await LocalWorker.create();
  ({ accountId, token } = await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: "cli-network" } }));
  ({ id: fn } = await api(worker.url, token).json("POST", "/v1/function", 201, { json: { name: "fetcher", lang: "PY", type: "DOCKER" } }));
}, 600_000);

afterAll(() => worker?.dispose());

describe("gcfaas network", () => {
  it("shows a new function's egress: none", async () => {
    expect((await ok(["network", fn, "--json"])).json()).toEqual({ egress: "none" });
    expect((await ok(["network", "fetcher"])).stdout).toMatch(/^egress:\s+none \(no network/m);
  });

  it("refuses internet without the operator's grant (exit 1, the API's 403 and the command that grants it)", async () => {
    const r = await gc(["network", fn, "internet"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain("egress_not_allowed");
    expect(r.stderr).toContain("accounts grant <account-id> --egress true");
    expect((await ok(["network", fn, "--json"])).json()).toEqual({ egress: "none" });
  });

  it("refuses a value other than none or internet before calling (exit 2)", async () => {
    const r = await gc(["network", fn, "public"]);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toContain('the network setting is none or internet, not "public"');
  });

  it("sets internet once the operator granted egress with `accounts grant`, and revoking puts it back to none", async () => {
    expect((await operator.ok(["accounts", "grant", accountId, "--egress", "true"])).stdout).toContain("network egress: yes");
    expect((await operator.ok(["accounts", "show", accountId, "--json"])).json()).toMatchObject({ egress: true, privileged: false });
    const set = await ok(["network", fn, "internet"]);
    expect(set.stderr).toContain(`network of ${fn} updated`);
    expect(set.stdout).toMatch(/^egress:\s+internet \(public addresses only/m);
    expect((await ok(["network", fn, "--json"])).json()).toEqual({ egress: "internet" });

    expect((await operator.ok(["accounts", "grant", accountId, "--egress", "false"])).stdout).toContain("network egress: no");
    expect((await ok(["network", fn, "--json"])).json()).toEqual({ egress: "none" });
    expect((await operator.ok(["accounts", "show", accountId])).stdout).toContain("privileged functions: no, network egress: no");
  });

  it("`accounts grant` wants a grant to change and a boolean (exit 2)", async () => {
    const none = await operator.gc(["accounts", "grant", accountId]);
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining("name a grant to change")]);
    const bad = await operator.gc(["accounts", "grant", accountId, "--egress", "maybe"]);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining("--egress must be true or false")]);
  });
});
