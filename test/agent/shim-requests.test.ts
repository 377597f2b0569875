import fs from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unpackArtifact } from "../../agent/builder/artifact.js";
import { forceRemove } from "../../agent/docker/client.js";
import { attachOutput } from "../../agent/docker/output.js";
import { sandboxHostConfig } from "../../agent/docker/sandbox.js";
import { FUNCTION_UID, LANGS, offlineImages, type Lang } from "../../agent/runtimes/languages.js";
import type { ZipItem } from "../support/zip.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { artifactOf, buildFiles, removeTempDirs, tempDir } from "./helpers/functions.js";

// The Python, Ruby, Rust and C# shims parse the runner's request themselves; Node's and Go's use
// their language's HTTP server. A request cut short (the connection ended inside its head or its
// body) must never reach the handler as a shorter request: the shim drops it (the four say so in the
// function's log) and its next connection serves as before.
const docker = new Docker();
const HANDLERS: Record<Lang, ZipItem[]> = {
  py: [{ name: "handler.py", data: 'def handle(event, context):\n    print("handler ran")\n    return "ok " + event.headers.get("x-probe", "")\n' }],
  rb: [{ name: "handler.rb", data: 'def handle(event, _context)\n  puts "handler ran"\n  "ok #{event.headers["x-probe"]}"\nend\n' }],
  js: [{ name: "handler.js", data: 'module.exports = async (event) => {\n  console.log("handler ran");\n  return "ok " + event.headers["x-probe"];\n};\n' }],
  go: [{ name: "handler.go", data: `package function

import (
	"fmt"
	"net/http"

	handler "github.com/openfaas/templates-sdk/go-http"
)

func Handle(req handler.Request) (handler.Response, error) {
	fmt.Println("handler ran")
	return handler.Response{StatusCode: http.StatusOK, Body: []byte("ok " + req.Header.Get("X-Probe"))}, nil
}
` }],
  rs: [
    { name: "Cargo.toml", data: '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngcfaas = "0.1"\n' },
    { name: "src/lib.rs", data: `use gcfaas::{Error, Request, Response};

pub fn handle(req: Request) -> Result<Response, Error> {
    println!("handler ran");
    Ok(Response::text(format!("ok {}", req.header("x-probe").unwrap_or(""))))
}
` },
  ],
  cs: [{ name: "Handler.cs", data: `using System;
using Gcfaas;

namespace Function
{
    public class FunctionHandler
    {
        public Response Handle(Request request)
        {
            Console.WriteLine("handler ran");
            string probe;
            request.Headers.TryGetValue("x-probe", out probe);
            return new Response { StatusCode = 200, Body = "ok " + probe };
        }
    }
}
` }],
};
/**
 * The shims that name what they dropped in the function's log: those that read the request
 * themselves, and Go's for a body cut short. Node's and Go's HTTP servers answer a head cut short
 * with their own 400 (the handler never runs, and the runner, whose write failed, never reads it).
 */
const SAYS_SO: Record<"head" | "body", readonly Lang[]> = { head: ["py", "rb", "rs", "cs"], body: ["py", "rb", "rs", "cs", "go"] };
const says = (cut: "head" | "body", lang: Lang) => (SAYS_SO[cut].includes(lang) ? 1 : 0);

/** Nothing, or the 400 of the language's own HTTP server; never the handler's answer. */
const NO_CALL = /^(|HTTP\/1\.1 400 [^]*)$/;

interface Shim {
  /** What the shim and the handler printed, both streams. */
  output(): string;
  /** The shim's connections, in the order it opened them. */
  next(): Promise<net.Socket>;
  stop(): Promise<void>;
}

/** The language's runtime image serving `artifact`, under gVisor where Docker has it, its channel socket ours. */
async function startShim(lang: Lang, artifact: string): Promise<Shim> {
  const functionDir = path.join(await tempDir(`shim-function-${lang}`), "function");
  await unpackArtifact(artifact, functionDir);
  const dir = await tempDir(`shim-requests-${lang}`);
  await fs.chmod(dir, 0o755);
  const queue: net.Socket[] = [];
  const wanted: ((s: net.Socket) => void)[] = [];
  const server = net.createServer((s) => {
    const w = wanted.shift();
    if (w) w(s);
    else queue.push(s);
  });
  await new Promise<void>((resolve) => server.listen(path.join(dir, "agent.sock"), resolve));
  await fs.chmod(path.join(dir, "agent.sock"), 0o666);
  const runtimes = Object.keys(((await docker.info()) as { Runtimes?: object }).Runtimes ?? {});
  const container = await docker.createContainer({
    Image: offlineImages()[lang].run,
    User: `${FUNCTION_UID}:${FUNCTION_UID}`,
    Env: ["GCFAAS_FUNCTION_ID=fn-shim", "GCFAAS_BUILD_ID=b-shim", "GCFAAS_TIMEOUT=30", "GCFAAS_MEMORY_MIB=256", "GCFAAS_SOCKET=/run/gcfaas/agent.sock"],
    HostConfig: sandboxHostConfig({ cpus: 1, memoryMiB: 256, pids: 128, tmpfsMiB: 16, privileged: false, runtime: runtimes.includes("runsc") ? "runsc" : undefined }, [
      { host: functionDir, container: "/function", readOnly: true },
      { host: dir, container: "/run/gcfaas", readOnly: true },
    ]),
  });
  let printed = "";
  await attachOutput(docker, container, (_stream, chunk) => (printed += chunk.toString("latin1")));
  await container.start();
  return {
    output: () => printed,
    next: () => {
      const s = queue.shift();
      return s ? Promise.resolve(s) : new Promise((resolve) => wanted.push(resolve));
    },
    stop: async () => {
      await forceRemove(docker, container.id);
      for (const s of queue) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Writes `bytes`, ends our side, and returns all the shim answered before it closed. */
function send(socket: net.Socket, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = "";
    socket.on("data", (d: Buffer) => (answer += d.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () => resolve(answer));
    socket.end(bytes);
  });
}

/** How often `pattern` shows in the output, once it shows `times` times or 10 s passed: output comes through dockerd's attach stream, and may trail the answer. */
async function printed(shim: Shim, pattern: RegExp, times: number): Promise<number> {
  const count = () => shim.output().match(new RegExp(pattern.source, "g"))?.length ?? 0;
  for (let waited = 0; count() < times && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
  return count();
}

const head = (probe: string, length: number) =>
  `POST /?a=1 HTTP/1.1\r\nhost: localhost\r\nx-gcfaas-invocation: inv-${probe}\r\nx-gcfaas-env: e30=\r\nx-probe: ${probe}\r\ncontent-length: ${length}\r\n\r\n`;

beforeAll(async () => {
  await ensureEnvironment(LANGS);
}, 1_800_000);
afterAll(removeTempDirs);

for (const lang of LANGS) {
  describe(`the ${lang} shim reading the runner's request`, () => {
    let shim: Shim;
    beforeAll(async () => {
      shim = await startShim(lang, artifactOf(await buildFiles(lang, HANDLERS[lang])));
    }, 600_000);
    afterAll(async () => shim?.stop());

    it("refuses a head cut short, logs it, and serves its next connection", async () => {
      const whole = head("cut", 0);
      expect(await send(await shim.next(), whole.slice(0, whole.indexOf("x-probe") + 5))).toMatch(SAYS_SO.head.includes(lang) ? /^$/ : NO_CALL);
      const answer = await send(await shim.next(), head("after", 0));
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(answer.endsWith("ok after")).toBe(true);
      expect(await printed(shim, /handler ran/, 1)).toBe(1);
      const named = says("head", lang);
      expect(await printed(shim, /shim: IncompleteRequest/, named)).toBe(named);
    }, 60_000);

    it("refuses a body shorter than its Content-Length", async () => {
      expect(await send(await shim.next(), `${head("short", 10)}abc`)).toMatch(SAYS_SO.body.includes(lang) ? /^$/ : NO_CALL);
      const answer = await send(await shim.next(), `${head("full", 3)}abc`);
      expect(answer.endsWith("ok full")).toBe(true);
      expect(await printed(shim, /handler ran/, 2)).toBe(2);
      const named = says("head", lang) + says("body", lang);
      expect(await printed(shim, /shim: IncompleteRequest/, named)).toBe(named);
    }, 60_000);
  });
}
