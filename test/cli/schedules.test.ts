import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, api, LocalWorker } from "../e2e/harness.js";
import { fmtIn, upcoming } from "../../cli/commands/schedules.js";
import { runCli, show } from "./run-cli.js";

// `gcfaas schedules …` against a local Worker; no agent is needed (tasks are only issued).
let worker: LocalWorker;
let token: string;
let functionId: string;

const gc = (args: string[], input?: string) =>
  runCli(args, { env: { GCFAAS_URL: worker.url, GCFAAS_TOKEN: token, GCFAAS_CONFIG: "/nonexistent/gcfaas.json" }, ...(input === undefined ? {} : { input }) });
const ok = async (args: string[], input?: string) => {
  const r = await gc(args, input);
  expect(r.code, `gcfaas ${args.join(" ")}\n${show(r)}`).toBe(0);
  return r;
};

beforeAll(async () => {
  worker = await LocalWorker.create();
  token = (await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: "cli-schedules" } })).token;
  functionId = (await api(worker.url, token).json("POST", "/v1/function", 201, { json: { name: "nightly", lang: "PY", type: "DOCKER" } })).id;
}, 300_000);

afterAll(async () => {
  await worker?.dispose();
});

describe("next runs, as the CLI shows them", () => {
  it("come from the service's own computation in the schedule's zone, and none while inactive", () => {
    const now = Date.parse("2026-03-28T12:00:00Z");
    // London springs forward that night: 01:30 on the 29th does not exist.
    expect(upcoming({ active: true, cron: "30 1 * * *", timezone: "Europe/London" }, 2, now).map((t) => new Date(t).toISOString())).toEqual([
      "2026-03-30T00:30:00.000Z",
      "2026-03-31T00:30:00.000Z",
    ]);
    expect(upcoming({ active: false, cron: "* * * * *", timezone: "UTC" }, 2, now)).toEqual([]);
    expect([fmtIn(now + 30_000, now), fmtIn(now + 12 * 60_000, now), fmtIn(now + 3 * 3_600_000, now), fmtIn(now + 2 * 86_400_000, now)]).toEqual(["in 30s", "in 12m", "in 3h", "in 2d"]);
  });
});

describe("gcfaas schedules", () => {
  it("creates, lists with next runs, shows, edits, sets the payload, tries and deletes", async () => {
    const created = JSON.parse((await ok(["schedules", "create", "--function", functionId, "--cron", "0 9 * * mon-fri", "--timezone", "Europe/London", "--json"])).stdout);
    const id: string = created.id;

    const table = (await ok(["schedules", "list", "--function", functionId])).stdout;
    expect(table).toMatch(/ID\s+FUNCTION\s+CRON\s+ZONE\s+ACTIVE\s+NEXT RUNS/);
    // e.g. "Mon 23 Nov 09:00 (in 3h), Tue 24 Nov 09:00 (in 1d)": two weekday mornings.
    expect(table).toMatch(new RegExp(`${id}.*0 9 \\* \\* mon-fri.*Europe/London.*yes.*(Mon|Tue|Wed|Thu|Fri) \\d\\d \\w{3} 09:00 \\(in \\w+\\), (Mon|Tue|Wed|Thu|Fri) \\d\\d \\w{3} 09:00 \\(in \\w+\\)`));

    await ok(["schedules", "edit", id, "--inactive", "--description", "paused for now"]);
    const edited = JSON.parse((await ok(["schedules", "get", id, "--json"])).stdout);
    expect(edited).toMatchObject({ active: false, cron: "0 9 * * mon-fri", timezone: "Europe/London", description: "paused for now", inlinePayload: null });
    expect((await ok(["schedules", "get", id])).stdout).toMatch(/next runs:\s+-/);

    await ok(["schedules", "payload", id, "--data", "-", "--content-type", "text/csv", "--query", "lang=en"], "a,b\n1,2\n");
    expect(JSON.parse((await ok(["schedules", "get", id, "--json"])).stdout).inlinePayload).toEqual({ query: "lang=en", body: Buffer.from("a,b\n1,2\n").toString("base64"), contentType: "text/csv" });

    // The function has no build yet: try answers as the task API would.
    const tried = await gc(["schedules", "try", id]);
    expect(tried.code, show(tried)).toBe(1);
    expect(tried.stderr).toContain("no_successful_build");

    const bad = await gc(["schedules", "edit", id, "--cron", "61 * * * *"]);
    expect(bad.code, show(bad)).toBe(1);
    expect(bad.stderr).toContain("minute field");

    expect(JSON.parse((await ok(["schedules", "delete", id, "--json"])).stdout)).toEqual({ id, deleted: true });
    expect((await gc(["schedules", "get", id])).code).toBe(1);
  });
});
