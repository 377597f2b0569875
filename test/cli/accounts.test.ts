import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, LocalWorker } from "../e2e/harness.js";
import { asOperator } from "./run-cli.js";

// `gcfaas accounts …` against a local Worker, as an operator (the admin token).
let worker: LocalWorker;
let accountId: string;

const { gc, ok } = asOperator(() => worker.url);

beforeAll(async () => {
  worker = await LocalWorker.create();
  const res = await fetch(`${worker.url}/v1/admin/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "cli-limits" }),
  });
  ({ accountId } = (await res.json()) as { accountId: string });
}, 600_000);

afterAll(() => worker?.dispose());

describe("gcfaas accounts", () => {
  it("shows an account's plan and the limits that apply to it", async () => {
    expect((await ok(["accounts", "show", accountId, "--json"])).json()).toMatchObject({
      id: accountId,
      plan: "DEVELOPER",
      limits: { schedules: 100, queuedBuilds: 10, artifactsKept: 5, syncWaits: 32 },
    });
    const human = (await ok(["accounts", "show", accountId])).stdout;
    expect(human).toMatch(/^LIMIT\s+VALUE/m);
    expect(human).toMatch(/^syncWaits\s+32$/m);
  });

  it("changes limits, and `default` gives one back the operator's default", async () => {
    expect((await ok(["accounts", "limits", accountId, "--schedules", "500", "--sync-waits", "0"])).stdout).toContain("schedules 500");
    expect((await ok(["accounts", "show", accountId, "--json"])).json().limits).toEqual({ schedules: 500, queuedBuilds: 10, artifactsKept: 5, syncWaits: 0 });
    await ok(["accounts", "limits", accountId, "--schedules", "default"]);
    expect((await ok(["accounts", "show", accountId, "--json"])).json().limits.schedules).toBe(100);
  });

  it("refuses a value that is not a whole number before calling, and shows the API's refusal of one out of range", async () => {
    const usage = await gc(["accounts", "limits", accountId, "--schedules", "1.5"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--schedules must be a whole number");
    const refused = await gc(["accounts", "limits", accountId, "--artifacts-kept", "0"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("artifactsKept must be at least 1");
  });
});
