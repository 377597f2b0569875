import { describe, expect, it } from "vitest";
import { loadConfig, type AgentConfig } from "../../agent/config.js";

/** The agent sends its token to the control plane's URL: never in clear to another host, unless told. */
const TOKEN = `gca_${"a".repeat(64)}`;
const load = (url: string, args: string[] = [], env: NodeJS.ProcessEnv = {}) => loadConfig(["--url", url, "--node-id", "n1", "--token", TOKEN, ...args], env) as AgentConfig;

describe("agent --url", () => {
  it("takes https anywhere and http to this host itself", () => {
    for (const url of ["https://api.example.com", "http://127.0.0.1:8787", "http://127.9.0.1:1", "http://localhost:8787", "http://[::1]:8787"]) expect(load(url).url).toBe(url);
  });

  it("refuses plain http to another host, naming the way out", () => {
    expect(() => load("http://10.20.30.40:8787")).toThrow(/url: http:\/\/10\.20\.30\.40:8787 is plain http to another host: the agent token would cross the network in clear.*--insecure/);
    expect(() => load("http://api.example.com")).toThrow(/plain http to another host/);
  });

  it("takes it with --insecure or GCFAAS_INSECURE=1", () => {
    expect(load("http://10.20.30.40:8787", ["--insecure"]).insecure).toBe(true);
    expect(load("http://10.20.30.40:8787", [], { GCFAAS_INSECURE: "1" }).url).toBe("http://10.20.30.40:8787");
  });

  it("refuses other schemes", () => {
    expect(() => load("ftp://api.example.com")).toThrow(/url: must be the control plane's http\(s\) URL/);
  });
});
