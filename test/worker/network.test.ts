import { describe, expect, it } from "vitest";
import { ADMIN, call, callJson, expectError, expectNoContent, grantEgress, newAccount, newFunction, flushedDb } from "./helpers.js";

// A function's network (api-decisions "Network egress"): "none" by default; "internet" only for
// accounts the operator granted egress.

const REFUSED = { error: { code: "egress_not_allowed", message: "network egress is not allowed for this account; the operator must grant it first" } };

const network = (token: string, fn: string) => callJson<{ egress: string }>(`/v1/function/${fn}/network`, 200, { token });
const setNetwork = (token: string, fn: string, json: unknown, headers: Record<string, string> = {}) =>
  call(`/v1/function/${fn}/network`, { token, method: "PUT", json, headers });
const editAccount = (accountId: string, json: unknown, token: string | null = ADMIN) => call(`/v1/admin/accounts/${accountId}`, { token, method: "PATCH", json });
const egressOf = async (fn: string) => (await (await flushedDb()).prepare("select egress from functions where id = ?").bind(fn).first<{ egress: string }>())?.egress;

describe("GET /v1/function/<function_id>/network", () => {
  it('answers {"egress": "none"} for a new function', async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const res = await call(`/v1/function/${fn}/network`, { token });
    expect([res.status, await res.json()]).toEqual([200, { egress: "none" }]);
  });

  it("answers 404 for another account's function and an unknown one, 401 without a token", async () => {
    const owner = await newAccount();
    const fn = await newFunction(owner.token);
    const { token } = await newAccount();
    await expectError(call(`/v1/function/${fn}/network`, { token }), 404, "not_found");
    await expectError(call("/v1/function/nosuchfunction/network", { token }), 404, "not_found");
    await expectError(call(`/v1/function/${fn}/network`), 401, "unauthorized");
  });
});

describe("PUT /v1/function/<function_id>/network", () => {
  it('answers 403 egress_not_allowed for "internet" without the operator\'s grant, and changes nothing; "none" is always allowed', async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const res = await setNetwork(token, fn, { egress: "internet" });
    expect([res.status, await res.json()]).toEqual([403, REFUSED]);
    expect(await network(token, fn)).toEqual({ egress: "none" });
    await expectNoContent(setNetwork(token, fn, { egress: "none" }));
  });

  it("answers 204 once the account is granted, and the function reads back what was set", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    await grantEgress(accountId);
    await expectNoContent(setNetwork(token, fn, { egress: "internet" }));
    expect(await network(token, fn)).toEqual({ egress: "internet" });
    await expectNoContent(setNetwork(token, fn, { egress: "none" }));
    expect(await network(token, fn)).toEqual({ egress: "none" });
  });

  it("refuses a bad value, a missing or unknown field (naming it), a body that is not JSON, and one without a JSON Content-Type", async () => {
    const { token, accountId } = await newAccount();
    await grantEgress(accountId);
    const fn = await newFunction(token);
    const fieldsOf = async (json: unknown) => (await expectError(setNetwork(token, fn, json), 400, "validation_failed")).details?.map((d) => d.field);
    expect(await fieldsOf({ egress: "public" })).toEqual(["egress"]);
    expect(await fieldsOf({ egress: "INTERNET" })).toEqual(["egress"]);
    expect(await fieldsOf({ egress: true })).toEqual(["egress"]);
    expect(await fieldsOf({})).toEqual(["egress"]);
    expect(await fieldsOf({ egress: "internet", allow: ["10.0.0.0/8"] })).toEqual(["allow"]);
    expect(await fieldsOf(["internet"])).toEqual(["body"]);
    await expectError(call(`/v1/function/${fn}/network`, { token, method: "PUT", body: "{", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    await expectError(call(`/v1/function/${fn}/network`, { token, method: "PUT", body: '{"egress":"internet"}', headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
    await expectError(call(`/v1/function/${fn}/network`, { token, method: "PUT", body: '{"egress":"internet"}' }), 415, "unsupported_media_type");
    expect(await egressOf(fn)).toBe("none");
  });

  it("answers 404, not 403, for another account's function, granted or not, and leaves it alone", async () => {
    const owner = await newAccount();
    await grantEgress(owner.accountId);
    const fn = await newFunction(owner.token);
    await expectNoContent(setNetwork(owner.token, fn, { egress: "internet" }));
    const stranger = await newAccount();
    await expectError(setNetwork(stranger.token, fn, { egress: "none" }), 404, "not_found");
    await expectError(setNetwork(stranger.token, fn, { egress: "internet" }), 404, "not_found");
    await grantEgress(stranger.accountId);
    await expectError(setNetwork(stranger.token, fn, { egress: "none" }), 404, "not_found");
    expect(await egressOf(fn)).toBe("internet");
  });

  it("is the only way in: function create and edit refuse egress as an unknown field", async () => {
    const { token, accountId } = await newAccount();
    await grantEgress(accountId);
    await expectError(call("/v1/function", { token, json: { name: "x", lang: "PY", type: "DOCKER", egress: "internet" } }), 400, "validation_failed");
    const fn = await newFunction(token);
    await expectError(call(`/v1/function/${fn}`, { token, method: "PATCH", json: { egress: "internet" } }), 400, "validation_failed");
    await expectError(call(`/v1/function/${fn}/capabilities`, { token, json: { egress: "internet" } }), 400, "validation_failed");
    expect(await egressOf(fn)).toBe("none");
  });
});

describe("PATCH /v1/admin/accounts/<account_id> with egress", () => {
  it("grants (204), is off by default, shows in the account view, and refuses a non-boolean, an unknown account and a missing admin token", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    expect(await callJson(`/v1/admin/accounts/${accountId}`, 200, { token: ADMIN })).toMatchObject({ privileged: false, egress: false });
    await expectNoContent(editAccount(accountId, { egress: true }));
    expect(await callJson(`/v1/admin/accounts/${accountId}`, 200, { token: ADMIN })).toMatchObject({ privileged: false, egress: true });
    await expectNoContent(setNetwork(token, fn, { egress: "internet" }));
    expect((await expectError(editAccount(accountId, { egress: "yes" }), 400, "validation_failed")).details?.map((d) => d.field)).toEqual(["egress"]);
    await expectError(editAccount("nosuchaccount", { egress: true }), 404, "not_found");
    await expectError(editAccount(accountId, { egress: false }, token), 401, "unauthorized");
    expect(await egressOf(fn)).toBe("internet");
    // With the other grant in the same body, both apply, each on its own.
    await expectNoContent(editAccount(accountId, { privileged: true, egress: false }));
    expect(await (await flushedDb()).prepare("select privileged, egress from accounts where id = ?").bind(accountId).first()).toEqual({ privileged: 1, egress: 0 });
  });

  it('revoking puts the account\'s functions back to "none" and refuses "internet" again; other accounts keep theirs', async () => {
    const { token, accountId } = await newAccount();
    await grantEgress(accountId);
    const [a, b] = [await newFunction(token), await newFunction(token)];
    await expectNoContent(setNetwork(token, a, { egress: "internet" }));
    const other = await newAccount();
    await grantEgress(other.accountId);
    const theirs = await newFunction(other.token);
    await expectNoContent(setNetwork(other.token, theirs, { egress: "internet" }));

    await grantEgress(accountId, false);
    expect([await network(token, a), await network(token, b)]).toEqual([{ egress: "none" }, { egress: "none" }]);
    const res = await setNetwork(token, a, { egress: "internet" });
    expect([res.status, await res.json()]).toEqual([403, REFUSED]);
    expect(await network(other.token, theirs)).toEqual({ egress: "internet" });
  });
});
