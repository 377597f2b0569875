import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { describeInvoice, listInvoices } from "../services/invoices.js";

export const invoiceRoutes = new Hono<AppEnv>()
  .get("/list", async (c) => c.json(await listInvoices(c.var.db, c.var.caller.accountId)))
  .get("/:id", async (c) => c.json(await describeInvoice(c.var.db, c.var.caller.accountId, c.req.param("id"))));
