import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import { Readable } from "node:stream";
import type { ControlPlane } from "../control/control-plane.js";

/**
 * PUTs a file to the control plane as a stream with its exact Content-Length: R2 needs a known
 * length, and an artifact of hundreds of MiB must not sit in the agent's memory on the way.
 */
export async function putFile(control: ControlPlane, p: string, file: string): Promise<number> {
  const { size } = await fs.stat(file);
  const res = await fetch(new URL(p, control.baseUrl), {
    method: "PUT",
    headers: { ...control.authHeader, "content-type": "application/octet-stream", "content-length": String(size) },
    body: Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>,
    duplex: "half",
  } as RequestInit);
  if (!res.ok) throw new Error(`PUT ${p}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  await res.body?.cancel();
  return size;
}
