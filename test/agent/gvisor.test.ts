import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import type { Lang } from "../../agent/runtimes/languages.js";
import { dockerClient } from "../../agent/docker/client.js";
import { resolveSandbox } from "../../agent/docker/sandbox-runtime.js";
import { RUNSC_PIDS_OVERHEAD } from "../../agent/docker/sandbox.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";
import type { ZipItem } from "../support/zip.js";

/**
 * Every language under gVisor (runsc), built under it too: results and logs, the timeout (504),
 * the memory limit (a kill, 500) and the pids limit, as under runc. One function per language
 * answers each case by its `mode` query parameter, so each language compiles once.
 */
const handlers: Record<Lang, ZipItem[]> = {
  py: [{ name: "handler.py", data: `import os, subprocess, time
def handle(event, context):
    mode = event.query.get("mode", "hello")
    if mode == "sleep":
        time.sleep(60)
    if mode == "mem":
        return str(len(bytearray(512 * 1024 * 1024)))
    if mode == "pids":
        n = 0
        try:
            for _ in range(200):
                subprocess.Popen(["sleep", "30"])
                n += 1
        except OSError:
            pass
        return str(n)
    print("hello from", os.uname().release)
    return "ok"
` }],
  js: [{ name: "handler.js", data: `const { spawn } = require("node:child_process");
const os = require("node:os");
module.exports = async (event) => {
  const mode = event.query.mode || "hello";
  if (mode === "sleep") await new Promise((r) => setTimeout(r, 60000));
  if (mode === "mem") return String(Buffer.alloc(512 * 1024 * 1024, 1).length);
  if (mode === "pids") {
    let n = 0;
    for (let i = 0; i < 200; i++) {
      try {
        const c = spawn("sleep", ["30"]);
        c.on("error", () => {});
        if (c.pid) n++;
      } catch {}
    }
    return String(n);
  }
  console.log("hello from", os.release());
  return "ok";
};
` }],
  rb: [{ name: "handler.rb", data: `require "etc"

def handle(event, _context)
  mode = event.query.fetch("mode", "hello")
  sleep 60 if mode == "sleep"
  return ("x" * (512 * 1024 * 1024)).bytesize.to_s if mode == "mem"
  if mode == "pids"
    n = 0
    begin
      200.times { Process.spawn("sleep", "30"); n += 1 }
    rescue SystemCallError
    end
    return n.to_s
  end
  puts "hello from #{Etc.uname[:release]}"
  "ok"
end
` }],
  go: [{ name: "handler.go", data: `package function

import (
	"fmt"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"time"

	handler "github.com/openfaas/templates-sdk/go-http"
)

func Handle(req handler.Request) (handler.Response, error) {
	q, _ := url.ParseQuery(req.QueryString)
	switch q.Get("mode") {
	case "sleep":
		time.Sleep(60 * time.Second)
	case "mem":
		b := make([]byte, 512<<20)
		for i := range b {
			b[i] = 1
		}
		return handler.Response{StatusCode: 200, Body: []byte(strconv.Itoa(len(b)))}, nil
	case "pids":
		n := 0
		for i := 0; i < 200; i++ {
			if exec.Command("sleep", "30").Start() != nil {
				break
			}
			n++
		}
		return handler.Response{StatusCode: 200, Body: []byte(strconv.Itoa(n))}, nil
	}
	release, _ := exec.Command("uname", "-r").Output()
	fmt.Println("hello from", strings.TrimSpace(string(release)))
	return handler.Response{StatusCode: 200, Body: []byte("ok")}, nil
}
` }],
  rs: [
    { name: "Cargo.toml", data: '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngcfaas = "0.1"\n' },
    { name: "src/lib.rs", data: `use gcfaas::{Error, Request, Response};

pub fn handle(req: Request) -> Result<Response, Error> {
    match req.query_param("mode").as_deref() {
        Some("sleep") => {
            std::thread::sleep(std::time::Duration::from_secs(60));
            Ok(Response::text("late"))
        }
        // black_box: the optimizer must not drop the allocation whose length is all it needs.
        Some("mem") => Ok(Response::text(std::hint::black_box(vec![1u8; 512 << 20]).len().to_string())),
        Some("pids") => {
            let mut n = 0;
            for _ in 0..200 {
                if std::process::Command::new("sleep").arg("30").spawn().is_err() { break }
                n += 1;
            }
            Ok(Response::text(n.to_string()))
        }
        _ => {
            let release = std::process::Command::new("uname").arg("-r").output().map(|o| o.stdout).unwrap_or_default();
            println!("hello from {}", String::from_utf8_lossy(&release).trim());
            Ok(Response::text("ok"))
        }
    }
}
` },
  ],
  cs: [{ name: "Handler.cs", data: `using System;
using System.Diagnostics;
using Gcfaas;

namespace Function
{
    public class FunctionHandler
    {
        public Response Handle(Request request)
        {
            string mode;
            request.Query.TryGetValue("mode", out mode);
            var response = new Response { StatusCode = 200 };
            if (mode == "sleep") System.Threading.Thread.Sleep(60000);
            if (mode == "mem")
            {
                var b = new byte[512 * 1024 * 1024];
                for (int i = 0; i < b.Length; i += 4096) b[i] = 1;
                response.Body = b.Length.ToString();
                return response;
            }
            if (mode == "pids")
            {
                int n = 0;
                try { for (int i = 0; i < 200; i++) { Process.Start("sleep", "30"); n++; } } catch (Exception) { }
                response.Body = n.ToString();
                return response;
            }
            Console.WriteLine("hello from " + Environment.OSVersion.Version);
            response.Body = "ok";
            return response;
        }
    }
}
` }],
};

const PIDS = 64;
let runner: Runner;
const built = new Map<Lang, Built>();

beforeAll(async () => {
  await ensureEnvironment(Object.keys(handlers) as Lang[]);
  // The test command installs gVisor and registers it (scripts/images/ensure-docker.sh).
  expect(await resolveSandbox(dockerClient(), "runsc")).toBe("runsc");
  runner = await Runner.create({ stateDir: path.join(await tempDir("state-gvisor"), "state"), agentId: "test-gvisor", runtime: "runsc", pidsLimit: PIDS });
}, 900_000);

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

async function fn(lang: Lang): Promise<Built> {
  if (!built.has(lang)) {
    const b = await buildFiles(lang, handlers[lang], { runtime: "runsc" });
    expect(b.result.ok, b.log.join("\n")).toBe(true);
    built.set(lang, b);
  }
  return built.get(lang)!;
}

for (const lang of Object.keys(handlers) as Lang[])
  describe(`${lang} under gVisor`, () => {
    it("builds under runsc and answers with its result and log, in gVisor's kernel", async () => {
      const b = await fn(lang);
      expect(b.log.join("\n")).toContain("artifact ready");
      const res = await runner.invoke(call(b, lang, {}));
      expect([res.status, res.body.toString().replace(/^"|"$/g, "")], res.log.join("\n")).toEqual([200, "ok"]);
      expect(res.runtime).toBe("runsc");
      // gVisor's own kernel reports itself as 4.4.0, whatever the host runs.
      expect(res.log.join("\n")).toMatch(/hello from 4\.4\.0/);
    });

    it("answers 504 past its timeout", async () => {
      const res = await runner.invoke(call(await fn(lang), lang, { query: { mode: "sleep" } }, { timeout: 3 }));
      expect(res.status).toBe(504);
      expect(res.log.at(-1)).toMatch(/timed out after 3 s/);
    });

    it("is killed past its memory limit (500)", async () => {
      const res = await runner.invoke(call(await fn(lang), lang, { query: { mode: "mem" } }, { memSize: 64 }));
      expect(res.status, res.log.join("\n")).toBe(500);
    });

    it("is held by the pids limit, and the node keeps serving it", async () => {
      const b = await fn(lang);
      const res = await runner.invoke(call(b, lang, { query: { mode: "pids" } }));
      // A runtime that needs threads of its own may fail outright at the limit; either way far
      // fewer than 200 processes start.
      if (res.status === 200) expect(Number(res.body.toString().replace(/"/g, ""))).toBeLessThan(PIDS + RUNSC_PIDS_OVERHEAD);
      else expect(res.status).toBe(500);
      expect((await runner.invoke(call(b, lang, {}))).status).toBe(200);
    });
  });
