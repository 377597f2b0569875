import { z } from "zod";

/**
 * A function's network (`GET|PUT /v1/function/<id>/network`, api-decisions "Network egress"):
 * "none", the default, gives it no interface but loopback; "internet" lets it reach public
 * addresses only, on nodes whose agent allows it, for accounts the operator granted.
 */
export const EGRESS = ["none", "internet"] as const;
export type Egress = (typeof EGRESS)[number];

export const egress = z.enum(EGRESS, { error: 'must be "none" or "internet"' });

/** PUT /v1/function/<id>/network. */
export const networkSet = z.strictObject({
  egress: egress.describe('"none": no network (the default); "internet": public addresses only (needs the operator\'s grant)'),
});
export type NetworkSet = z.output<typeof networkSet>;

/** GET /v1/function/<id>/network. */
export const networkOut = z.object({ egress });
export type Network = z.infer<typeof networkOut>;
