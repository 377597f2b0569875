
import type { Operation } from "./describe.js";

/**
 * Every operation the Worker serves. The OpenAPI document is generated from this table, and a
 * test checks it against the routes the app really registers, in both directions.
 */
export const OPERATIONS: Operation[] = [













];
