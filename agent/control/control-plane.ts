import fs from "node:fs/promises";
import { createWriteStream } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

/** The agent's HTTP side of the control plane: sources, artifacts, large inputs and results. */
export class ControlPlane {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
  ) {}

  private url(p: string) {
    return new URL(p, this.baseUrl).toString();
  }

  private headers(extra: Record<string, string> = {}) {
    return { authorization: `Bearer ${this.token}`, ...extra };
  }

  private async ok(res: Response, what: string) {
    if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
    return res;
  }

  async download(p: string, dest: string): Promise<void> {
    const res = await this.ok(await fetch(this.url(p), { headers: this.headers() }), `GET ${p}`);
    if (!res.body) throw new Error(`GET ${p}: empty body`);
    const tmp = `${dest}.part`;
    await pipeline(Readable.fromWeb(res.body as never), createWriteStream(tmp));
    await fs.rename(tmp, dest);
  }

  async getJson<T>(p: string): Promise<T> {
    const res = await this.ok(await fetch(this.url(p), { headers: this.headers() }), `GET ${p}`);
    return (await res.json()) as T;
  }

  async getBytes(p: string): Promise<Buffer> {
    const res = await this.ok(await fetch(this.url(p), { headers: this.headers() }), `GET ${p}`);
    return Buffer.from(await res.arrayBuffer());
  }

  async put(p: string, body: Buffer, contentType = "application/octet-stream"): Promise<void> {
    await this.ok(
      await fetch(this.url(p), {
        method: "PUT",
        headers: this.headers({ "content-type": contentType, "content-length": String(body.length) }),
        body,
      }),
      `PUT ${p}`,
    );
  }

  wsUrl(shard: number): string {
    const u = new URL(`/v1/agent/connect?shard=${shard}`, this.baseUrl);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    return u.toString();
  }

  get authHeader() {
    return this.headers();
  }
}
