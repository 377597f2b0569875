import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, callDirect as call, callJson, expectError, onRowlessTasks } from "./helpers.js";
import { accountWithEverything, describeRoute, requestOf, ROUTES, type Owned } from "./fixtures.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

describe("authentication on every /v1 record route", () => {
  let owned: Owned;
  let agentToken: string;
  beforeAll(async () => {
    owned = await accountWithEverything();
    agentToken = (await callJson("/v1/admin/agent-tokens", 201, { token: ADMIN, json: { nodeId: "auth-test" } })).token;
  }, 30_000);

  const BAD_AUTH: [string, Record<string, string>][] = [
    ["no Authorization header", {}],
    ["an empty header", { authorization: "" }],
    ["Bearer without a token", { authorization: "Bearer " }],
    ["an unknown token", { authorization: "Bearer gc_0000000000000000000000000000000000000000000000000000000000000000" }],
    ["another scheme", { authorization: "Basic dXNlcjpwYXNz" }],
    ["the operator secret", { authorization: `Bearer ${ADMIN}` }],
  ];

  it("answers 401 unauthorized without a valid account token, and changes nothing", async () => {
    const tokens: [string, Record<string, string>][] = [...BAD_AUTH, ["an agent token", { authorization: `Bearer ${agentToken}` }]];
    for (const route of ROUTES) {
      for (const [what, auth] of tokens) {
        const res = await call(route.path(owned), requestOf(route, owned, auth));
        const err = await expectError(res, 401, "unauthorized").catch((e) => {
          throw new Error(`${describeRoute(route, owned)} with ${what}: ${(e as Error).message}`);
        });
        expect(err.message).toMatch(/token/);
      }
    }
    // The records are untouched.
    expect(await callJson(`/v1/function/${owned.fn}`, 200, { token: owned.token })).toMatchObject({ name: "owned", paused: false });
    expect(await callJson("/v1/tag/list", 200, { token: owned.token })).toEqual([{ id: owned.tag, name: "owned", color: "#808080" }]);
    expect((await callJson("/v1/trigger/list", 200, { token: owned.token })).totalCount).toBe(1);
  });

  it("lets the owner's token through on every route", async () => {
    // Deletes last, the function's after its dependents', so every route finds its record.
    const deletes = ROUTES.filter((r) => r.method === "DELETE").reverse();
    for (const route of [...ROUTES.filter((r) => r.method !== "DELETE"), ...deletes]) {
      const res = await call(route.path(owned), { token: owned.token, ...requestOf(route, owned) });
      expect(res.status, `${describeRoute(route, owned)} → ${await res.text()}`).toBeLessThan(300);
    }
  });
});
