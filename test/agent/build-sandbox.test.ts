import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildContainersLeft, buildFiles, removeTempDirs } from "./helpers/functions.js";


const HANDLER = { name: "handler.js", data: "module.exports = async () => 'ok';\n" };

afterAll(async () => {
  await removeTempDirs();
});

beforeAll(async () => {
  await ensureEnvironment(["js"]);
});

describe("build sandbox", () => {
  it("kills a build that runs past its time limit and removes its container", async () => {
    const pkg = JSON.stringify({ name: "slow", version: "1.0.0", scripts: { preinstall: "echo about to hang && sleep 120" } });
    // The limit has to leave npm room to reach the script first: on a loaded machine npm alone
    // took over 3 s to start under gVisor, and the build was cut before it printed anything.
    const built = await buildFiles("js", [HANDLER, { name: "package.json", data: pkg }], { timeoutSeconds: 15 });
    expect(built.result.ok).toBe(false);
    expect(built.log).toContain("about to hang");
    expect(built.log.at(-1)).toBe("[build] failed: build timed out after 15 s");
    expect(await buildContainersLeft()).toBe(0);
  });

  it("gives build steps no network", async () => {
    const probe = "require('net').connect(53, '1.1.1.1').on('connect', () => { console.log('NETWORK' + '-REACHABLE'); process.exit(0); }).on('error', (e) => { console.log('no network: ' + e.code); process.exit(0); })";
    const pkg = JSON.stringify({ name: "probe", version: "1.0.0", scripts: { preinstall: `node -e "${probe}"` } });
    const built = await buildFiles("js", [HANDLER, { name: "package.json", data: pkg }]);
    expect(built.result.ok, built.log.join("\n")).toBe(true);
    expect(built.log.join("\n")).toMatch(/no network: (ENETUNREACH|EHOSTUNREACH|ECONNREFUSED)/);
    // npm echoes the script, so the probe prints a string its source does not contain.
    expect(built.log.join("\n")).not.toContain("NETWORK-REACHABLE");
  });
});
