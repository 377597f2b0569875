import type { Bindings } from "../env.js";
import { notFound } from "../errors.js";
import { storageUnavailable } from "../db/unavailable.js";
import { counterFor } from "../counters/client.js";
import { limitDefaults } from "../limits/account-limits.js";
import type { EndpointRow } from "./facts.js";

/** What the public door reads of an endpoint: its settings, its function's pause, the account's limit of synchronous waits. */
export interface Door {
  endpoint: EndpointRow;
  paused: boolean;
  syncWaits: number;
}

/**
 * The endpoint's door facts from its object (one RPC, no D1 in the steady state); null when there
 * is no such endpoint. While D1 fails, an endpoint the object does not hold yet answers 503.
 */
export async function doorOf(env: Bindings, endpointId: string): Promise<Door | null> {
  const a = await counterFor(env, endpointId).door(endpointId);
  if ("unavailable" in a) throw storageUnavailable();
  if ("missing" in a) return null;
  return { endpoint: a.facts.endpoint, paused: a.facts.paused, syncWaits: a.facts.ownSyncWaits ?? limitDefaults(env).syncWaits };
}

/** As doorOf, with the spec's 404 for an unknown endpoint. */
export async function openDoor(env: Bindings, endpointId: string): Promise<Door> {
  const door = await doorOf(env, endpointId);
  if (!door) throw notFound("endpoint");
  return door;
}
