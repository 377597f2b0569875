import fs from "node:fs/promises";
import path from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner, type InvokeRequest, type InvokeResult } from "../../agent/runner/index.js";
import type { Lang } from "../../agent/runtimes/languages.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";
import { CONFIG_HANDLERS } from "./helpers/config-handlers.js";

/**
 * Environment variables and secrets reach a function as process environment variables, per call
 * through the shim channel: never the container's environment (docker inspect), never the agent's
 * disk, never another function.
 */
const LANGS_UNDER_TEST = (process.env.GCFAAS_CONFIG_LANGS?.split(",") ?? ["py", "js", "rb", "go", "rs", "cs"]) as Lang[];
const SECRET = "sk_live_4f1d-never-at-rest-9b7e";
const docker = new Docker();
const built = {} as Record<Lang, Built>;
let runner: Runner;
let stateDir: string;
let n = 0;

interface Seen {
  greeting: string | null;
  apiKey: string | null;
  atLoad?: string | null;
  sawHeader: boolean;
}

async function run(lang: Lang, functionId: string, env: Record<string, string> | undefined, headers: Record<string, string> = {}): Promise<{ res: InvokeResult; seen: Seen }> {
  const req: InvokeRequest = { ...call(built[lang], lang, { headers }, {}, functionId), ...(env ? { env } : {}) };
  const res = await runner.invoke(req);
  expect(res.status, `${lang}: ${res.body.toString()}\n${res.log.join("\n")}`).toBe(200);
  return { res, seen: JSON.parse(res.body.toString()) as Seen };
}

/** Every file under `dir`, read whole: none may hold the secret. */
async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const data = await fs.readFile(file).catch(() => Buffer.alloc(0));
    if (data.includes(needle)) hits.push(file);
  }
  return hits;
}

beforeAll(async () => {
  await ensureEnvironment(LANGS_UNDER_TEST);
  for (const lang of LANGS_UNDER_TEST) built[lang] = await buildFiles(lang, CONFIG_HANDLERS[lang]);
  stateDir = path.join(await tempDir("state-config"), "state");
  runner = await Runner.create({ stateDir, agentId: "test-config", pool: { size: 1, max: 2, idleMs: 60_000, languages: LANGS_UNDER_TEST } });
});

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

for (const lang of LANGS_UNDER_TEST) {
  describe(`configuration in ${lang}`, () => {
    it("reaches the function as environment variables, and not the container's environment nor the agent's disk", async () => {
      const fn = `fn-config-${lang}-${++n}`;
      const { res, seen } = await run(lang, fn, { GREETING: "hello", API_KEY: SECRET });
      expect(seen).toMatchObject({ greeting: "hello", apiKey: SECRET, sawHeader: false });
      if (seen.atLoad !== undefined) expect(seen.atLoad).toBe(SECRET);
      const inspect = await docker.getContainer(res.containerId).inspect();
      expect(JSON.stringify(inspect)).not.toContain(SECRET);
      expect(JSON.stringify(inspect)).not.toContain(Buffer.from(SECRET).toString("base64").slice(0, 16));
      expect(await filesHolding(stateDir, SECRET)).toEqual([]);
    });

    it("applies a change from the next call: no warm container keeps the old configuration", async () => {
      const fn = `fn-config-${lang}-${++n}`;
      const first = await run(lang, fn, { GREETING: "one", API_KEY: SECRET });
      const warm = await run(lang, fn, { GREETING: "one", API_KEY: SECRET });
      expect(warm.res.container).toBe("warm");
      expect(warm.res.containerId).toBe(first.res.containerId);
      const changed = await run(lang, fn, { GREETING: "two" });
      expect(changed.seen).toMatchObject({ greeting: "two", apiKey: null });
      if (changed.seen.atLoad !== undefined) expect(changed.seen.atLoad).toBeNull();
      expect(changed.res.containerId).not.toBe(first.res.containerId);
      // The old configuration's container is gone, not kept idle for a later call.
      expect(runner.containers().some((c) => c.id === first.res.containerId)).toBe(false);
    });

    it("never reaches another function on the node, and a caller's header cannot set it", async () => {
      const mine = `fn-config-${lang}-${++n}`;
      const theirs = `fn-config-${lang}-${++n}`;
      await run(lang, mine, { GREETING: "mine", API_KEY: SECRET });
      const forged = Buffer.from(JSON.stringify({ API_KEY: "forged" })).toString("base64");
      const other = await run(lang, theirs, undefined, { "X-Gcfaas-Env": forged });
      expect(other.seen).toMatchObject({ greeting: null, apiKey: null, sawHeader: false });
      const again = await run(lang, mine, { GREETING: "mine", API_KEY: SECRET }, { "x-gcfaas-env": forged });
      expect(again.seen).toMatchObject({ greeting: "mine", apiKey: SECRET });
    });
  });
}
