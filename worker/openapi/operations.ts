import * as ep from "../../shared/schemas/endpoint.js";
import * as build from "../../shared/schemas/build.js";
import * as task from "../../shared/schemas/task.js";
import * as live from "../../shared/schemas/live-logs.js";
import * as admin from "../../shared/schemas/admin.js";
import * as out from "../../shared/schemas/responses.js";

import type { Operation } from "./describe.js";
import { anyBody, created, createdTask, json, listFilterBody, noContent, publicReplay, replay, resultHeaders, syncAnswer, taskCallHeaders } from "./parts.js";

/**
 * Every operation the Worker serves. The OpenAPI document is generated from this table, and a
 * test checks it against the routes the app really registers, in both directions.
 */
export const OPERATIONS: Operation[] = [






  { method: "post", path: "/v1/endpoint/:functionId", summary: "Create a public endpoint for a function", group: "endpoints", auth: "account", body: { ...json(ep.endpointCreate, false) }, ok: created("endpoint"), errors: [400, 401, 404, 415] },
  { method: "get", path: "/v1/endpoint/list", summary: "List public endpoints (paged)", group: "endpoints", auth: "account", query: ep.endpointListFilter, body: listFilterBody(ep.endpointListFilter), ok: { status: 200, schema: out.endpointList, description: "Pagination envelope." }, errors: [400, 401, 404] },
  { method: "get", path: "/v1/endpoint/:id", summary: "Get a public endpoint", group: "endpoints", auth: "account", ok: { status: 200, schema: out.endpointGet, description: "The endpoint." }, errors: [401, 404] },
  { method: "get", path: "/v1/endpoint/:id/metrics", summary: "Tasks through a public endpoint", group: "endpoints", auth: "account", ok: { status: 200, schema: out.endpointMetrics, description: "Today (UTC), pending, last 7 days." }, errors: [401, 404] },
  { method: "patch", path: "/v1/endpoint/:id", summary: "Edit a public endpoint", group: "endpoints", auth: "account", body: json(ep.endpointEdit, false), ok: noContent, errors: [400, 401, 404, 415] },
  { method: "delete", path: "/v1/endpoint/:id", summary: "Delete a public endpoint", group: "endpoints", auth: "account", ok: noContent, errors: [401, 404] },

  { method: "post", path: "/v1/build/:functionId", summary: "Upload a zip and build it", group: "builds", auth: "account", query: build.buildCreateQuery, body: { contentType: "application/octet-stream", required: true, description: "A zip of the contents of the function folder, at most 50 MiB." }, ok: created("build"), errors: [400, 401, 404, 413, 415, 429, 500] },
  { method: "get", path: "/v1/build/list", summary: "List builds (paged)", group: "builds", auth: "account", query: build.buildListQuery, ok: { status: 200, schema: out.buildList, description: "Pagination envelope." }, errors: [400, 401, 404] },
  { method: "get", path: "/v1/build/:id", summary: "Get a build with its timeline and log (its first 500 and last 500 lines, with one line `… N lines cut …` between them)", group: "builds", auth: "account", ok: { status: 200, schema: out.buildGet, description: "The build." }, errors: [401, 404] },
  { method: "get", path: "/v1/build/:id/log", summary: "A build's whole log as text, kept up to 4 MiB (a longer log ends with a note of the lines cut)", group: "builds", auth: "account", ok: { status: 200, description: "The log, one line a line; while the build runs, the lines its record holds.", contentType: "text/plain" }, errors: [401, 404] },

  { method: "post", path: "/v1/task/:functionId", summary: "Run a function once", group: "tasks", auth: "account", headers: taskCallHeaders, body: anyBody, ok: createdTask, also: [syncAnswer], errors: [400, 401, 402, 404, 409, 413, 429] },
  { method: "get", path: "/v1/task/list", summary: "List tasks (functionId: only that function's; 404 when it is not one of the caller's)", group: "tasks", auth: "account", query: task.taskListQuery, ok: { status: 200, schema: out.taskList, description: "Newest first." }, errors: [400, 401, 404] },
  { method: "get", path: "/v1/task/:id", summary: "Get a task", group: "tasks", auth: "account", ok: { status: 200, schema: out.taskGet, description: "The task." }, errors: [401, 404] },
  { method: "get", path: "/v1/task/:id/result", summary: "The function's response", group: "tasks", auth: "account", query: task.resultQuery, ok: replay, also: [{ status: 202, schema: out.taskPending, description: "The task has not finished: {status: 0, progress}.", headers: resultHeaders }], errors: [400, 401, 404, 410, 502] },
  { method: "get", path: "/v1/task/:id/log", summary: "The function's stdout and stderr lines; with follow=1 (Accept: text/event-stream), live as Server-Sent Events", group: "tasks", auth: "account", query: live.taskLogQuery, ok: { status: 200, schema: out.taskLog, description: "Log lines. With follow=1: a text/event-stream instead." }, events: "Server-Sent Events: `event: line` (data: one log line) for the lines printed so far and then each new line within a second; `event: dropped` (data {\"lines\": n}) when this reader was too slow and lost n lines; `event: end` (data {\"status\"}) when the task finishes, then the stream closes. A finished task gets all its lines and the end at once.", errors: [400, 401, 404, 410, 429] },

  { method: "get", path: "/v1/invoice/list", summary: "List invoices", group: "invoices", auth: "account", ok: { status: 200, schema: out.invoiceList, description: "Newest first." }, errors: [401] },
  { method: "get", path: "/v1/invoice/:id", summary: "Get an invoice", group: "invoices", auth: "account", ok: { status: 200, schema: out.invoiceGet, description: "The invoice." }, errors: [401, 404] },

  { method: "get", path: "/v1/metrics", summary: "Platform metrics: the caller's pending, today's and completed tasks, pending builds, and the fleet's active, free and busy nodes", group: "invoices", auth: "account", ok: { status: 200, schema: out.platformMetrics, description: "Integers; tasks and builds are the caller's, nodes the fleet's." }, errors: [401] },
  { method: "get", path: "/v1/usage", summary: "This period's usage against the plan", group: "invoices", auth: "account", ok: { status: 200, description: "{period, plan, invocations, pending, remaining, durationMs, gbSeconds}", contentType: "application/json" }, errors: [401] },
  { method: "post", path: "/v1/billing/webhook", summary: "Payment provider webhook (Stripe-style signature)", group: "invoices", auth: "none", body: { contentType: "application/json", required: true, description: "An invoice.payment_succeeded or invoice.payment_failed event." }, ok: { status: 200, description: "{received: true, duplicate}", contentType: "application/json" }, errors: [400, 404, 500] },
  { method: "options", path: "/gc/:id", summary: "CORS preflight of a public endpoint (not counted)", group: "public", auth: "none", ok: { status: 204, description: "CORS headers for an allowed origin." }, errors: [404] },
  { method: "all", path: "/gc/:id", summary: "Call a public endpoint (any method but OPTIONS)", group: "public", auth: "none", headers: taskCallHeaders, body: anyBody, ok: createdTask, also: [syncAnswer], errors: [400, 402, 403, 404, 409, 413, 429, 503] },
  { method: "get", path: "/gc/:taskId/result", summary: "A public call's result: anonymous for 5 minutes, then the owner's token", group: "public", auth: "optional", query: task.resultQuery, ok: publicReplay, errors: [400, 401, 404, 410, 502] },

  { method: "post", path: "/v1/admin/accounts", summary: "Create an account and its first token", group: "admin", auth: "admin", body: json(admin.accountCreate), ok: { status: 201, schema: out.accountCreated, description: "The token is shown once." }, errors: [400, 401, 415] },
  { method: "get", path: "/v1/admin/accounts/:accountId", summary: "An account, its plan, its grants (privileged, egress) and the limits that apply to it", group: "admin", auth: "admin", ok: { status: 200, schema: admin.accountView, description: "limits: the account's own values, else the operator's defaults." }, errors: [401, 404] },
  { method: "patch", path: "/v1/admin/accounts/:accountId", summary: "Change an account's operator settings: its plan, the privileged and egress grants, its limits (null: back to the default)", group: "admin", auth: "admin", body: json(admin.accountEdit), ok: noContent, errors: [400, 401, 404, 415] },
  { method: "post", path: "/v1/admin/accounts/:accountId/tokens", summary: "Mint another account token", group: "admin", auth: "admin", ok: { status: 201, schema: out.tokenCreated, description: "The token is shown once." }, errors: [401, 404] },
  { method: "post", path: "/v1/admin/agent-tokens", summary: "Mint an agent token bound to one node id", group: "admin", auth: "admin", body: json(admin.agentTokenCreate), ok: { status: 201, schema: out.agentTokenCreated, description: "The token is shown once; it speaks for that node only." }, errors: [400, 401, 415] },
  { method: "delete", path: "/v1/admin/tokens/:tokenId", summary: "Revoke a token (an agent token's sockets close at once)", group: "admin", auth: "admin", ok: noContent, errors: [401, 404] },
  { method: "get", path: "/v1/admin/nodes", summary: "Every node that is or was connected", group: "admin", auth: "admin", ok: { status: 200, schema: out.fleetList, description: "The fleet, by node id." }, errors: [401] },
  { method: "post", path: "/v1/admin/nodes/:nodeId/drain", summary: "Let a node finish its work and take no more", group: "admin", auth: "admin", ok: noContent, errors: [401, 404] },
  { method: "post", path: "/v1/admin/nodes/:nodeId/resume", summary: "Undo drain and disable", group: "admin", auth: "admin", ok: noContent, errors: [401, 404] },
  { method: "post", path: "/v1/admin/nodes/:nodeId/disable", summary: "Close a node's connections now and refuse it until resumed; its work goes back to the queue", group: "admin", auth: "admin", ok: noContent, errors: [401, 404] },

  { method: "get", path: "/v1/agent/config", summary: "Dispatcher shard count and the token's node id", group: "agent", auth: "agent", ok: { status: 200, description: "{shards, nodeId}", contentType: "application/json" }, errors: [401] },
  { method: "get", path: "/v1/agent/connect", summary: "The agent WebSocket (protocol in shared/protocol)", group: "agent", auth: "agent", ok: { status: 101, description: "Switching protocols." }, errors: [400, 401] },
  { method: "get", path: "/v1/agent/status", summary: "Queues of every shard, and the calling node's connections", group: "agent", auth: "agent", ok: { status: 200, description: "{shards: [{waiting, running, agents}]}: agents holds only the calling node's entry", contentType: "application/json" }, errors: [401] },
  { method: "get", path: "/v1/agent/builds/:id/source", summary: "A build's zip", group: "agent", auth: "agent", ok: { status: 200, description: "The zip.", contentType: "application/octet-stream" }, errors: [401, 404] },
  { method: "put", path: "/v1/agent/builds/:id/artifact", summary: "Upload a build's artifact", group: "agent", auth: "agent", body: { contentType: "application/octet-stream", required: true }, ok: noContent, errors: [401, 404, 411, 413] },
  { method: "put", path: "/v1/agent/builds/:id/log", summary: "Upload a build's whole log as text (at most 4 MiB of lines and a short trailer), before build.done", group: "agent", auth: "agent", body: { contentType: "text/plain", required: true }, ok: noContent, errors: [401, 404, 411, 413] },
  { method: "get", path: "/v1/agent/builds/:id/artifact", summary: "Download a build's artifact", group: "agent", auth: "agent", ok: { status: 200, description: "The artifact tar.", contentType: "application/octet-stream" }, errors: [401, 404] },
  { method: "get", path: "/v1/agent/tasks/:id/input", summary: "A task's input", group: "agent", auth: "agent", ok: { status: 200, description: "{method, query, headers, body}", contentType: "application/json" }, errors: [401, 404] },
  { method: "put", path: "/v1/agent/tasks/:id/result", summary: "Upload a large result body", group: "agent", auth: "agent", body: { contentType: "application/octet-stream", required: true }, ok: noContent, errors: [400, 401, 404, 411, 413] },
  { method: "put", path: "/v1/agent/tasks/:id/storage/:setBy", summary: "Upload a storage value too large for the report frame (the task's own id as setBy)", group: "agent", auth: "agent", body: { contentType: "application/octet-stream", required: true }, ok: noContent, errors: [401, 404, 411, 413] },
  { method: "get", path: "/v1/agent/tasks/:id/storage/:setBy", summary: "The storage value task setBy stored, for a later task of the same function", group: "agent", auth: "agent", ok: { status: 200, description: "The stored bytes.", contentType: "application/octet-stream" }, errors: [401, 404] },
  { method: "put", path: "/v1/agent/tasks/:id/log", summary: "Upload a log too large for the report frame (a JSON array of lines)", group: "agent", auth: "agent", body: { contentType: "application/json", required: true }, ok: noContent, errors: [400, 401, 404, 411, 413] },

  { method: "get", path: "/healthz", summary: "Liveness", group: "meta", auth: "none", ok: { status: 200, description: "ok", contentType: "text/plain" }, errors: [] },
  { method: "get", path: "/v1/openapi.json", summary: "This document", group: "meta", auth: "none", ok: { status: 200, description: "OpenAPI 3.1", contentType: "application/json" }, errors: [] },
];
