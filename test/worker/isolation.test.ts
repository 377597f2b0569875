import { beforeAll, describe, expect, it } from "vitest";
import { callDirect as call, callJson, expectError, getWithBody, newEndpoint, newFunction, onRowlessTasks } from "./helpers.js";
import { accountWithEverything, describeRoute, requestOf, ROUTES, type Owned } from "./fixtures.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

const idsOf = (o: Owned) => [o.tag, o.fn, o.next, o.trigger, o.schedule, o.endpoint, o.build, o.task, o.finished, o.chained, o.invoice];

describe("isolation between accounts", () => {
  let owner: Owned;
  let intruder: Owned;
  beforeAll(async () => {
    owner = await accountWithEverything();
    intruder = await accountWithEverything();
  }, 30_000);

  it("answers 404 for another account's record on every route, exactly as for an unknown id", async () => {
    const recordRoutes = ROUTES.filter((r) => idsOf(owner).some((id) => r.path(owner).includes(id)));
    expect(recordRoutes.length).toBeGreaterThan(20);
    for (const route of recordRoutes) {
      const path = route.path(owner);
      const res = await call(path, { token: intruder.token, ...requestOf(route, intruder) });
      const err = await expectError(res, 404, "not_found").catch((e) => {
        throw new Error(`${describeRoute(route, owner)}: ${(e as Error).message}`);
      });
      // The answer does not reveal that the record exists.
      let unknownPath = path;
      for (const id of idsOf(owner)) unknownPath = unknownPath.replace(id, "0".repeat(26));
      const unknown = await expectError(call(unknownPath, { token: intruder.token, ...requestOf(route, intruder) }), 404, "not_found");
      expect(err, describeRoute(route, owner)).toEqual(unknown);
    }
  });

  it("leaves the owner's records untouched by those attempts", async () => {
    const { token } = owner;
    expect(await callJson(`/v1/function/${owner.fn}`, 200, { token })).toMatchObject({ name: "owned", paused: false, capabilities: { timeout: 30 } });
    expect(await callJson("/v1/tag/list", 200, { token })).toEqual([{ id: owner.tag, name: "owned", color: "#808080" }]);
    expect(await callJson(`/v1/trigger/${owner.trigger}`, 200, { token })).toMatchObject({ status: 200 });
    expect(await callJson(`/v1/endpoint/${owner.endpoint}`, 200, { token })).toMatchObject({ dailyLimit: -1 });
    expect((await callJson("/v1/task/list", 200, { token })).map((t: { id: string }) => t.id)).toEqual([owner.chained, owner.finished, owner.task]);
    expect((await callJson("/v1/build/list?limit=100", 200, { token })).totalCount).toBe(3);
  });

  it("refuses a trigger whose functionId or nextId is another account's function, naming the field", async () => {
    const { token } = intruder;
    const first = await expectError(call("/v1/trigger", { token, json: { functionId: owner.fn, nextId: intruder.fn, includeResult: true } }), 400, "validation_failed");
    expect(first.details?.map((d) => d.field)).toEqual(["functionId"]);
    const next = await expectError(call("/v1/trigger", { token, json: { functionId: intruder.fn, nextId: owner.fn, includeResult: true } }), 400, "validation_failed");
    expect(next.details?.map((d) => d.field)).toEqual(["nextId"]);
  });

  it("refuses another account's tag ids on functions, triggers and endpoints, naming the field", async () => {
    const { token } = intruder;
    const tag = [intruder.tag, owner.tag];
    const attempts = [
      call("/v1/function", { token, json: { name: "x", lang: "GO", type: "DOCKER", tag } }),
      call(`/v1/function/${intruder.fn}`, { token, method: "PATCH", json: { tag } }),
      call("/v1/trigger", { token, json: { functionId: intruder.fn, nextId: intruder.fn, includeResult: true, tag } }),
      call(`/v1/trigger/${intruder.trigger}`, { token, method: "PATCH", json: { tag } }),
      call(`/v1/endpoint/${intruder.fn}`, { token, json: { tag } }),
      call(`/v1/endpoint/${intruder.endpoint}`, { token, method: "PATCH", json: { tag } }),
    ];
    for (const res of attempts) expect((await expectError(res, 400, "validation_failed")).details?.map((d) => d.field)).toEqual(["tag[1]"]);
  });

  it("answers 404 for list filters that name another account's function or tag", async () => {
    const { token } = intruder;
    await expectError(call(`/v1/function/list?tag=${owner.tag}`, { token }), 404, "not_found");
    await expectError(getWithBody("/v1/trigger/list", { token, body: JSON.stringify({ functionId: owner.fn }) }), 404, "not_found");
    await expectError(call(`/v1/trigger/list?functionId=${owner.fn}`, { token }), 404, "not_found");
    await expectError(getWithBody("/v1/endpoint/list", { token, body: JSON.stringify({ functionId: owner.fn }) }), 404, "not_found");
    await expectError(call(`/v1/build/list?functionId=${owner.fn}`, { token }), 404, "not_found");
    await expectError(call(`/v1/task/list?functionId=${owner.fn}`, { token }), 404, "not_found");
  });

  it("lists only the caller's records", async () => {
    const { token } = intruder;
    const extraFn = await newFunction(token, { name: "extra" });
    await newEndpoint(token, extraFn);
    const theirIds = new Set(idsOf(owner));
    const lists = [
      await callJson("/v1/function/list", 200, { token }),
      await callJson("/v1/tag/list", 200, { token }),
      (await callJson("/v1/trigger/list?limit=20", 200, { token })).results,
      (await callJson("/v1/endpoint/list?limit=999", 200, { token })).results,
      (await callJson("/v1/build/list?limit=100", 200, { token })).results,
      await callJson("/v1/task/list", 200, { token }),
      await callJson("/v1/invoice/list", 200, { token }),
    ] as { id: string }[][];
    for (const list of lists) {
      expect(list.length).toBeGreaterThan(0);
      expect(list.filter((r) => theirIds.has(r.id))).toEqual([]);
    }
    expect(lists[0]!.map((f) => f.id).sort()).toEqual([intruder.fn, intruder.next, extraFn].sort());
    expect(lists[3]).toHaveLength(2);
  });
});
