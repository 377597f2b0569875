import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { ArtifactStore } from "../../agent/work/artifact-store.js";

let dir: string;
let downloads: string[];
let forgotten: string[];

const source = {
  async download(p: string, dest: string) {
    downloads.push(p);
    await new Promise((r) => setTimeout(r, 10));
    await fs.writeFile(dest, p);
  },
};
const user = { forgetBuild: async (id: string) => void forgotten.push(id) };

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-artifacts-"));
  downloads = [];
  forgotten = [];
});

const exists = (file: string) => fs.stat(file).then(() => true, () => false);

describe("artifacts on an agent", () => {
  it("downloads a build's artifact once however many tasks ask at the same time", async () => {
    const store = new ArtifactStore(dir, source, user);
    const got = await Promise.all(Array.from({ length: 5 }, () => store.acquire("b1", "/v1/agent/builds/b1/artifact")));
    expect(downloads).toEqual(["/v1/agent/builds/b1/artifact"]);
    expect(new Set(got.map((g) => g.file))).toEqual(new Set([path.join(dir, "b1.tar")]));
    await Promise.all(got.map((g) => g.release()));
  });

  it("keeps the most recently used builds and removes older ones with their containers", async () => {
    const store = new ArtifactStore(dir, source, user, 2);
    for (const id of ["b1", "b2", "b3"]) await (await store.acquire(id, `/a/${id}`)).release();
    expect(forgotten).toEqual(["b1"]);
    expect(await exists(path.join(dir, "b1.tar"))).toBe(false);
    expect(store.kept().sort()).toEqual(["b2", "b3"]);
    await (await store.acquire("b2", "/a/b2")).release(); // b2 is now the newest
    await (await store.acquire("b4", "/a/b4")).release();
    expect(forgotten).toEqual(["b1", "b3"]);
  });

  it("never removes a build while one of its tasks runs", async () => {
    const store = new ArtifactStore(dir, source, user, 1);
    const held = await store.acquire("b1", "/a/b1");
    await (await store.acquire("b2", "/a/b2")).release();
    expect(forgotten).toEqual([]);
    await held.release();
    expect(forgotten).toEqual(["b1"]);
    expect(await exists(path.join(dir, "b2.tar"))).toBe(true);
  });

  it("keeps an artifact this node built, without downloading it", async () => {
    const store = new ArtifactStore(dir, source, user);
    const built = path.join(dir, "built.tar");
    await fs.writeFile(built, "tar");
    await store.adopt("b9", built);
    const got = await store.acquire("b9", "/a/b9");
    expect(downloads).toEqual([]);
    expect(await fs.readFile(got.file, "utf8")).toBe("tar");
    await got.release();
  });
});
