import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { describeInvoice, listInvoices } from "../services/invoices.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";

export const invoiceRoutes = new Hono<AppEnv>()
  .get("/list", describeRoute({
    summary: "List invoices",
    group: "invoices", auth: "account",
    ok: { status: 200, schema: out.invoiceList, description: "Newest first." },
    errors: [401],
  }), async (c) => c.json(await listInvoices(c.var.db, c.var.caller.accountId)))
  .get("/:id", describeRoute({
    summary: "Get an invoice",
    group: "invoices", auth: "account",
    ok: { status: 200, schema: out.invoiceGet, description: "The invoice." },
    errors: [401, 404],
  }), async (c) => c.json(await describeInvoice(c.var.db, c.var.caller.accountId, c.req.param("id"))));
