import type { Lang } from "../../../agent/runtimes/languages.js";
import type { ZipItem } from "../../support/zip.js";

/**
 * One function per language whose `mode` query parameter pushes on a limit: `env` answers the
 * function id and memory the runtime was given, `sleep` outlives any test timeout, `alloc` writes
 * 160 MiB (more than a 64 MiB function may have, less than the node's default of 256), and `spawn`
 * starts 300 sleeping threads or processes and answers how many it got.
 */
export const LIMIT_PROBES: Record<Lang, ZipItem[]> = {
  py: [{ name: "handler.py", data: `import os, threading, time

def handle(event, context):
    mode = event.query.get("mode")
    if mode == "env":
        return {"functionId": context.function_id, "memory": context.memory_mib, "env": os.environ.get("GCFAAS_FUNCTION_ID")}
    if mode == "sleep":
        time.sleep(30)
    if mode == "alloc":
        block = b"x" * (160 << 20)
        return {"allocated": len(block)}
    if mode == "spawn":
        started = 0
        for _ in range(300):
            try:
                threading.Thread(target=time.sleep, args=(20,), daemon=True).start()
                started += 1
            except RuntimeError:
                pass
        return {"started": started}
    return {"mode": mode}
` }],
  js: [{ name: "handler.js", data: `const { spawn } = require("node:child_process");
module.exports = async (event, context) => {
  const mode = event.query.mode;
  if (mode === "env") return { functionId: context.functionId, memory: context.memoryMiB, env: process.env.GCFAAS_FUNCTION_ID };
  if (mode === "sleep") await new Promise((r) => setTimeout(r, 30000));
  if (mode === "alloc") return { allocated: Buffer.alloc(160 << 20, 1).length };
  if (mode === "spawn") {
    let started = 0;
    for (let i = 0; i < 300; i++) {
      const ok = await new Promise((resolve) => {
        const child = spawn("sleep", ["20"], { stdio: "ignore" });
        child.once("spawn", () => resolve(true));
        child.once("error", () => resolve(false));
      });
      if (ok) started++;
    }
    return { started };
  }
  return { mode };
};
` }],
  rb: [{ name: "handler.rb", data: `def handle(event, context)
  mode = event.query["mode"]
  return { functionId: context.function_id, memory: context.memory_mib, env: ENV["GCFAAS_FUNCTION_ID"] } if mode == "env"
  sleep 30 if mode == "sleep"
  return { allocated: ("x" * (160 << 20)).bytesize } if mode == "alloc"
  if mode == "spawn"
    started = 0
    300.times do
      Thread.new { sleep 20 }
      started += 1
    rescue ThreadError
      nil
    end
    return { started: started }
  end
  { mode: mode }
end
` }],
  go: [{ name: "handler.go", data: `package function

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"time"

	handler "github.com/openfaas/templates-sdk/go-http"
)

func Handle(req handler.Request) (handler.Response, error) {
	q, _ := url.ParseQuery(req.QueryString)
	body := ""
	switch q.Get("mode") {
	case "env":
		body = fmt.Sprintf("{\\"functionId\\":%q,\\"memory\\":%s,\\"env\\":%q}", os.Getenv("GCFAAS_FUNCTION_ID"), os.Getenv("GCFAAS_MEMORY_MIB"), os.Getenv("GCFAAS_FUNCTION_ID"))
	case "sleep":
		time.Sleep(30 * time.Second)
	case "alloc":
		block := make([]byte, 160<<20)
		for i := range block {
			block[i] = 1
		}
		body = fmt.Sprintf("{\\"allocated\\":%d}", len(block))
	case "spawn":
		started := 0
		for i := 0; i < 300; i++ {
			if exec.Command("sleep", "20").Start() == nil {
				started++
			}
		}
		body = fmt.Sprintf("{\\"started\\":%d}", started)
	}
	return handler.Response{StatusCode: 200, Body: []byte(body)}, nil
}
` }],
  rs: [
    { name: "Cargo.toml", data: '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngcfaas = "0.1"\n' },
    { name: "src/lib.rs", data: `use gcfaas::{Error, Request, Response};
use std::time::Duration;

pub fn handle(req: Request) -> Result<Response, Error> {
    let body = match req.query_param("mode").as_deref() {
        Some("env") => {
            let id = std::env::var("GCFAAS_FUNCTION_ID").unwrap_or_default();
            let memory = std::env::var("GCFAAS_MEMORY_MIB").unwrap_or_default();
            format!("{{\\"functionId\\":{},\\"memory\\":{},\\"env\\":{}}}", gcfaas::json_string(&id), memory, gcfaas::json_string(&id))
        }
        Some("sleep") => {
            std::thread::sleep(Duration::from_secs(30));
            String::new()
        }
        Some("alloc") => {
            // black_box: an allocation nobody reads may be optimised away.
            let block = std::hint::black_box(vec![1u8; 160 << 20]);
            format!("{{\\"allocated\\":{}}}", block.iter().step_by(4096).map(|&b| b as usize).sum::<usize>() * 4096)
        }
        Some("spawn") => {
            let started = (0..300).filter(|_| std::thread::Builder::new().spawn(|| std::thread::sleep(Duration::from_secs(20))).is_ok()).count();
            format!("{{\\"started\\":{}}}", started)
        }
        _ => String::new(),
    };
    Ok(Response::json(body))
}
` },
  ],
  cs: [{ name: "Handler.cs", data: `using System;
using System.Threading;
using Gcfaas;

namespace Function
{
    public class FunctionHandler
    {
        public Response Handle(Request request)
        {
            string mode;
            request.Query.TryGetValue("mode", out mode);
            var body = "";
            if (mode == "env")
            {
                var id = Environment.GetEnvironmentVariable("GCFAAS_FUNCTION_ID");
                body = "{\\"functionId\\":\\"" + id + "\\",\\"memory\\":" + Environment.GetEnvironmentVariable("GCFAAS_MEMORY_MIB") + ",\\"env\\":\\"" + id + "\\"}";
            }
            if (mode == "sleep") Thread.Sleep(30000);
            if (mode == "alloc")
            {
                var block = new byte[160 << 20];
                for (var i = 0; i < block.Length; i += 4096) block[i] = 1;
                body = "{\\"allocated\\":" + block.Length + "}";
            }
            if (mode == "spawn")
            {
                var started = 0;
                for (var i = 0; i < 300; i++)
                {
                    try { new Thread(() => Thread.Sleep(20000)).Start(); started++; }
                    catch (Exception) { }
                }
                body = "{\\"started\\":" + started + "}";
            }
            var response = new Response { StatusCode = 200, BodyBytes = System.Text.Encoding.UTF8.GetBytes(body) };
            response.Headers["Content-Type"] = "application/json";
            return response;
        }
    }
}
` }],
};
