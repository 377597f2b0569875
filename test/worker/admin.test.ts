import { describe, expect, it } from "vitest";
import { ADMIN, call, callJson, expectError, newAccount, RECORD_ID } from "./helpers.js";

describe("POST /v1/admin/accounts", () => {
  it("creates an account and returns a working token", async () => {
    const acct = await newAccount("acme");
    expect(acct.accountId).toMatch(RECORD_ID);
    expect(acct.token).toMatch(/^gc_[0-9a-f]{64}$/);
    await callJson("/v1/tag/list", 200, { token: acct.token });
  });

  it("refuses without the operator secret", async () => {
    await expectError(call("/v1/admin/accounts", { json: { name: "x" } }), 401, "unauthorized");
    await expectError(call("/v1/admin/accounts", { token: "nope", json: { name: "x" } }), 401, "unauthorized");
  });

  it("validates the name", async () => {
    await expectError(call("/v1/admin/accounts", { token: ADMIN, json: {} }), 400, "validation_failed");
    await expectError(call("/v1/admin/accounts", { token: ADMIN, json: { name: "x", extra: 1 } }), 400, "validation_failed");
  });

  it("does not accept an account token", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/admin/accounts", { token, json: { name: "x" } }), 401, "unauthorized");
  });
});

describe("POST /v1/admin/accounts/<account_id>/tokens", () => {
  it("mints another token for the account", async () => {
    const acct = await newAccount();
    const minted = await callJson(`/v1/admin/accounts/${acct.accountId}/tokens`, 201, { token: ADMIN, method: "POST" });
    expect(minted.token).not.toBe(acct.token);
    await callJson("/v1/tag/list", 200, { token: minted.token });
  });

  it("answers 404 for an unknown account", async () => {
    await expectError(call("/v1/admin/accounts/nope/tokens", { token: ADMIN, method: "POST" }), 404, "not_found");
  });
});

describe("DELETE /v1/admin/tokens/<token_id>", () => {
  it("revokes a token", async () => {
    const acct = await newAccount();
    const res = await call(`/v1/admin/tokens/${acct.tokenId}`, { token: ADMIN, method: "DELETE" });
    expect(res.status).toBe(204);
    await expectError(call("/v1/tag/list", { token: acct.token }), 401, "unauthorized");
    await expectError(call(`/v1/admin/tokens/${acct.tokenId}`, { token: ADMIN, method: "DELETE" }), 404, "not_found");
  });
});

describe("POST /v1/admin/agent-tokens", () => {
  it("mints an agent token bound to a node id that opens no account route", async () => {
    const agent = await callJson("/v1/admin/agent-tokens", 201, { token: ADMIN, json: { nodeId: "host-1", name: "host-1" } });
    expect(agent).toEqual({ tokenId: expect.stringMatching(RECORD_ID), token: expect.stringMatching(/^gca_/), nodeId: "host-1" });
    expect(await callJson("/v1/agent/config", 200, { token: agent.token })).toMatchObject({ nodeId: "host-1" });
    await expectError(call("/v1/tag/list", { token: agent.token }), 401, "unauthorized");
  });

  it("requires a node id shaped as the protocol's", async () => {
    for (const json of [{}, { name: "host-1" }, { nodeId: "" }, { nodeId: "has space" }, { nodeId: "x".repeat(65) }, { nodeId: 7 }]) {
      const err = await expectError(call("/v1/admin/agent-tokens", { token: ADMIN, json }), 400, "validation_failed");
      expect(err.details?.map((d) => d.field)).toContain("nodeId");
    }
  });
});

describe("authentication", () => {
  it("accepts a bare token as well as Bearer", async () => {
    const { token } = await newAccount();
    const res = await call("/v1/tag/list", { headers: { authorization: token } });
    expect(res.status).toBe(200);
  });

  it("answers 401 without a token or with an unknown one", async () => {
    await expectError(call("/v1/function/list"), 401, "unauthorized");
    await expectError(call("/v1/function/list", { token: "gc_unknown" }), 401, "unauthorized");
  });

  it("answers 404 for unknown routes and 405 for a wrong method", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/nothing", { token }), 404, "not_found");
    const res = await call("/v1/tag/list", { token, method: "PUT" });
    expect(res.headers.get("allow")).toContain("GET");
    await expectError(res, 405, "method_not_allowed");
  });
});
