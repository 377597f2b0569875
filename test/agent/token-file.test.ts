import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig, type AgentConfig } from "../../agent/config.js";

const TOKEN = `gca_${"5".repeat(64)}`;
const base = ["--url", "http://127.0.0.1:8787", "--node-id", "n1"];
let dir: string;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-token-file-"));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function tokenFile(name: string, mode: number, text = `${TOKEN}\n`): Promise<string> {
  const file = path.join(dir, name);
  await fs.writeFile(file, text);
  await fs.chmod(file, mode);
  return file;
}

describe("the agent's token file (--token-file, GCFAAS_AGENT_TOKEN_FILE)", () => {
  it("reads the token from a file only its owner may read, from the flag or the environment", async () => {
    const file = await tokenFile("ok", 0o600);
    expect((loadConfig([...base, "--token-file", file], {}) as AgentConfig).token).toBe(TOKEN);
    expect((loadConfig(base, { GCFAAS_AGENT_TOKEN_FILE: file }) as AgentConfig).token).toBe(TOKEN);
  });

  it("refuses a file that others may read, saying the token may have leaked", async () => {
    const file = await tokenFile("open", 0o644);
    expect(() => loadConfig([...base, "--token-file", file], {})).toThrow(/readable or writable by others \(mode 644\); chmod 600 it and mint a new token/);
  });

  it("names a missing file and checks what it holds like any token", async () => {
    expect(() => loadConfig([...base, "--token-file", path.join(dir, "absent")], {})).toThrow(/--token-file .*absent: no such file/);
    const bad = await tokenFile("bad", 0o600, "not-a-token\n");
    expect(() => loadConfig([...base, "--token-file", bad], {})).toThrow(/token: must be an agent token/);
  });
});
