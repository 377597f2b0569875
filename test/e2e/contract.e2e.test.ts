import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { apiDocument } from "../../scripts/lib/api-document.js";
import { Contract, documentedFor, METHODS, operationsOf, schemeOf, violatingQueryValue, type Answer, type Document, type DocumentedOperation, type Parameter } from "../support/openapi-contract.js";
import { zipSources } from "../support/zip.js";
import { deploy, result } from "./deploy.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, type Api } from "./harness.js";

/**
 * The contract: every operation of /v1/openapi.json, called on the local Worker (workerd, real
 * D1, R2 and Durable Objects, a real agent) with inputs drawn from its own schemas and with
 * invalid ones, answers only what the document says: a documented status, Content-Type, headers
 * and a body its schema accepts. Operations come from the document, so a route added to it is
 * covered without an edit here; a route answering outside it fails here.
 */

// Collected from the code that serves the document; the first test checks the served one is the same.
const DOC = (await apiDocument("http://placeholder")) as unknown as Document;
const contract = new Contract(DOC);
const NO_SUCH_ID = "0nosuchrecord0";
const SECRET_NAME = "CONTRACT_SECRET";

let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;
/** Tokens per security scheme of the document. */
const tokens: Record<string, string> = { admin: ADMIN_TOKEN };
/** Records of each kind that exist, by what the document's parameter descriptions call them. */
const records: Record<string, string> = { secret: SECRET_NAME };

const HANDLER = ["def handle(event, context):", '    return {"statusCode": 200, "body": {"ok": True}}', ""].join("\n");

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  const account = await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "contract" } });
  tokens.account = account.token;
  records.account = account.accountId;
  records.token = (await admin.json("POST", `/v1/admin/accounts/${account.accountId}/tokens`, 201)).tokenId;
  // The agent scheme's calls speak for the real agent's node, so that they meet its builds and tasks.
  tokens.agent = await worker.agentToken("contract-agent");
  agent = await AgentProcess.start(worker, tokens.agent, "contract-agent", ["--slots", "2", "--langs", "py"]);
  records.node = "contract-agent";
  user = api(worker.url, account.token);

  const fn = await deploy(user, "py", await zipSources({ "handler.py": HANDLER }), "contract");
  expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
  records.function = fn.functionId;
  records.build = fn.buildId;
  records.tag = (await user.json("POST", "/v1/tag", 201, { json: { name: "contract" } })).id;
  records.trigger = (await user.json("POST", "/v1/trigger", 201, { json: { functionId: fn.functionId, nextId: fn.functionId, status: 599, includeResult: false } })).id;
  records.schedule = (await user.json("POST", "/v1/scheduled", 201, { json: { functionId: fn.functionId, cron: "0 0 1 1 *", timezone: "UTC" } })).id;
  const endpoint: string = (await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: {} })).id;
  records.endpoint = endpoint;
  records["public endpoint"] = endpoint;
  await user.json("PUT", `/v1/function/${fn.functionId}/secrets/${SECRET_NAME}`, 204, { json: { value: "s3cret" } });
  // Issued through the public endpoint: readable on /gc as well as on /v1/task.
  const taskId: string = (await api(worker.url).json("POST", `/gc/${endpoint}`, 201)).id;
  expect((await result(user, taskId)).status).toBe(200);
  records.task = taskId;
  // No invoice exists before the monthly renewal: its operations are called for an unknown one.
  records.invoice = NO_SUCH_ID;
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

/** A record of the kind the parameter's description names ("The function's id."). */
function recordFor(p: Parameter): string {
  if (/task that stored/.test(p.description ?? "")) return records.task!;
  const owner = /^The (.+)'s (?:id|name)\.$/.exec(p.description ?? "")?.[1];
  const id = owner && records[owner];
  if (!id) throw new Error(`no record for path parameter ${p.name} (${p.description}): give the contract test one`);
  return id;
}

/** Body fields that must name a record of the caller's to mean anything. */
const RECORD_FIELDS: Record<string, string> = { functionId: "function", nextId: "function", deadLetterFunctionId: "function", buildId: "build" };

function withRecords(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withRecords);
  if (!v || typeof v !== "object") return v;
  return Object.fromEntries(
    Object.entries(v).map(([k, x]) => {
      if (k === "tag" && Array.isArray(x)) return [k, [records.tag]];
      if (RECORD_FIELDS[k] && typeof x === "string") return [k, records[RECORD_FIELDS[k]!]];
      return [k, withRecords(x)];
    }),
  );
}

interface Call {
  path?: Record<string, string>;
  query?: URLSearchParams;
  body?: { type: string; data: string | Buffer };
  token?: string | null;
}

async function send(o: DocumentedOperation, c: Call): Promise<Answer> {
  const params = o.op.parameters ?? [];
  const path = o.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(c.path?.[name] ?? recordFor(params.find((p) => p.name === name)!)));
  const query = c.query?.toString();
  const scheme = schemeOf(o.op);
  const token = c.token === undefined ? scheme && tokens[scheme] : c.token;
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  if (c.body) headers["content-type"] = c.body.type;
  const res = await fetch(`${worker.url}${path}${query ? `?${query}` : ""}`, {
    method: o.method.toUpperCase(),
    headers,
    body: c.body?.data,
    redirect: "manual",
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** A body the operation documents, drawn from its schema where it has one. */
async function validBody(o: DocumentedOperation, seed: number): Promise<Call["body"]> {
  const content = o.op.requestBody?.content;
  // fetch sends no body on GET: list filters travel as query parameters too.
  if (!content || o.method === "get") return undefined;
  const [type, media] = Object.entries(content)[0]!;
  if (type === "application/json") return { type, data: JSON.stringify(media.schema ? withRecords(contract.sample(media.schema, seed)) : {}) };
  if (type === "application/octet-stream" && o.op.operationId === "createBuild") return { type, data: await zipSources({ "handler.py": HANDLER }) };
  return { type: type === "*/*" ? "text/plain" : type, data: Buffer.from("contract payload\n") };
}

function expectConforms(o: DocumentedOperation, answer: Answer) {
  expect(contract.problems(o, answer), `${o.method.toUpperCase()} ${o.path} answered ${answer.status}`).toEqual([]);
}

/** A refusal the document lists (a 5xx only where documented: the local webhook has no secret configured). */
function expectRefused(o: DocumentedOperation, answer: Answer, status?: number) {
  expectConforms(o, answer);
  if (status) expect(answer.status).toBe(status);
  else expect(answer.status).toBeGreaterThanOrEqual(400);
}

/**
 * Deletions of the API's records last, in the reverse of the document's order (which lists a
 * function before what hangs off it), so that every other operation meets the records and each
 * deletion meets its own. A DELETE on /gc is a call, not a deletion.
 */
function callOrder(ops: DocumentedOperation[]): DocumentedOperation[] {
  const deletion = (o: DocumentedOperation) => o.method === "delete" && o.path.startsWith("/v1/");
  return [...ops.filter((o) => !deletion(o)), ...ops.filter(deletion).reverse()];
}

/** Whether another path of the document serves `method` on this one (POST /v1/task/list is POST /v1/task/{id}). */
const servedByAnotherPath = (path: string, method: string) => documentedFor(DOC, path, method).some((p) => p !== path);

it("is the document the service serves", async () => {
  const served = (await (await fetch(`${worker.url}/v1/openapi.json`)).json()) as Document & { servers?: unknown };
  expect(served).toEqual({ ...DOC, servers: [{ url: worker.url }] });
});

callOrder(operationsOf(DOC)).forEach((o, n) => {
  const params = o.op.parameters ?? [];
  const json = o.op.requestBody?.content["application/json"];
  describe(`${o.method.toUpperCase()} ${o.path} (${o.op.operationId})`, () => {
    it("answers inputs drawn from its schemas as documented", async () => {
      for (const seed of [n * 10 + 1, n * 10 + 2]) expectConforms(o, await send(o, { query: contract.sampleQuery(params, seed), body: await validBody(o, seed) }));
    });

    if (schemeOf(o.op))
      it("refuses a call without a token with 401", async () => {
        expectRefused(o, await send(o, { token: null, body: await validBody(o, n) }), 401);
      });

    if (params.some((p) => p.in === "path") && o.method !== "options")
      it("refuses records that do not exist", async () => {
        const unknown = Object.fromEntries(params.filter((p) => p.in === "path").map((p) => [p.name, NO_SUCH_ID]));
        expectRefused(o, await send(o, { path: unknown, body: await validBody(o, n) }));
      });

    for (const p of params.filter((q) => q.in === "query")) {
      const bad = violatingQueryValue(contract.deref(p.schema));
      if (bad !== undefined)
        it(`refuses a query parameter ${p.name} its schema refuses`, async () => {
          const query = contract.sampleQuery(params, n);
          query.set(p.name, bad);
          expectRefused(o, await send(o, { query, body: await validBody(o, n) }), 400);
        });
    }

    if (json && o.method !== "get") {
      it("refuses a body that is not JSON", async () => {
        // 400 invalid_json, unless the route refuses the call before it reads the body (an unknown record).
        expectRefused(o, await send(o, { query: contract.sampleQuery(params, n), body: { type: "application/json", data: "{not json" } }));
      });
      if (json.schema && contract.deref(json.schema).additionalProperties === false)
        it("refuses a body field its schema does not know", async () => {
          const body = { ...(withRecords(contract.sample(json.schema!, n)) as object), notAField: true };
          expectRefused(o, await send(o, { query: contract.sampleQuery(params, n), body: { type: "application/json", data: JSON.stringify(body) } }), 400);
        });
      if (o.op.responses["415"])
        it("refuses a body of another Content-Type with 415", async () => {
          expectRefused(o, await send(o, { query: contract.sampleQuery(params, n), body: { type: "text/plain", data: "{}" } }), 415);
        });
    }
  });
});

// An operation the document does not list must not be served: such a call is refused as an
// unknown method (405), an unknown route (404), or by the /v1 token check that runs before routing (401).
describe("methods the document does not list", () => {
  for (const [path, item] of Object.entries(DOC.paths)) {
    const listed = Object.keys(item);
    const missing = METHODS.filter((m) => m !== "options" && !listed.includes(m) && !servedByAnotherPath(path, m));
    if (missing.length)
      it(`${path} serves no ${missing.join(", ")}`, async () => {
        const like = { method: listed[0]!, path, op: item[listed[0]!]! };
        for (const method of missing) {
          const answer = await send({ ...like, method }, {});
          expect([401, 404, 405], `${method.toUpperCase()} ${path}`).toContain(answer.status);
          expect(JSON.parse(answer.body.toString()).error.code, `${method.toUpperCase()} ${path}`).toMatch(/^(unauthorized|not_found|method_not_allowed)$/);
        }
      });
  }
});
