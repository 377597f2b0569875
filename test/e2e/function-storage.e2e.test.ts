import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { zipItems, type ZipItem } from "../support/zip.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, type Api } from "./harness.js";
import { deploy, result } from "./deploy.js";

/**
 * Function storage (GC-Storage) end to end, through the local service, a real agent and Docker:
 * the original service's storage guide has a function answer "No storage found" (404) and store a
 * value by answering with `GC-Storage: <base64>`; its next call gets the value in the request's
 * `GC-Storage` header. Each language below does that in its own idiom.
 */
const GREETING = (lang: string) => `stored by ${lang}`;

const handlers: Record<string, ZipItem[]> = {
  py: [{ name: "handler.py", data: `import base64
def handle(event, context):
    stored = event.headers.get("gc-storage")
    if not stored:
        return {"statusCode": 404, "headers": {"Content-Type": "text/plain", "GC-Storage": base64.b64encode(b"${GREETING("py")}").decode()}, "body": "No storage found"}
    return {"statusCode": 200, "headers": {"Content-Type": "text/plain"}, "body": base64.b64decode(stored).decode()}
` }],
  js: [{ name: "handler.js", data: `module.exports = async (event) => {
  const stored = event.headers["gc-storage"];
  if (!stored) return { statusCode: 404, headers: { "Content-Type": "text/plain", "GC-Storage": Buffer.from("${GREETING("js")}").toString("base64") }, body: "No storage found" };
  return { statusCode: 200, headers: { "Content-Type": "text/plain" }, body: Buffer.from(stored, "base64").toString() };
};
` }],
  rb: [{ name: "handler.rb", data: `require "base64"
def handle(event, _context)
  stored = event.headers["gc-storage"]
  if stored.nil? || stored.empty?
    return { statusCode: 404, headers: { "Content-Type" => "text/plain", "GC-Storage" => Base64.strict_encode64("${GREETING("rb")}") }, body: "No storage found" }
  end
  { statusCode: 200, headers: { "Content-Type" => "text/plain" }, body: Base64.strict_decode64(stored) }
end
` }],
  go: [{ name: "handler.go", data: `package function

import (
	"encoding/base64"
	"net/http"

	handler "github.com/openfaas/templates-sdk/go-http"
)

func Handle(req handler.Request) (handler.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "text/plain")
	stored, err := base64.StdEncoding.DecodeString(req.Header.Get("GC-Storage"))
	if err != nil || len(stored) == 0 {
		h.Set("GC-Storage", base64.StdEncoding.EncodeToString([]byte("${GREETING("go")}")))
		return handler.Response{StatusCode: http.StatusNotFound, Body: []byte("No storage found"), Header: h}, nil
	}
	return handler.Response{StatusCode: http.StatusOK, Body: stored, Header: h}, nil
}
` }],
  rs: [
    { name: "Cargo.toml", data: '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngcfaas = "0.1"\n' },
    { name: "src/lib.rs", data: `use gcfaas::{Error, Request, Response};

const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = (chunk[0] as u32) << 16 | (*chunk.get(1).unwrap_or(&0) as u32) << 8 | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= chunk.len() { out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char) } else { out.push('=') }
        }
    }
    out
}

fn decode(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let digits: Vec<u32> = text.bytes().filter(|b| *b != b'=').map(|b| ABC.iter().position(|c| *c == b).unwrap_or(0) as u32).collect();
    for chunk in digits.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, d)| acc | d << (18 - 6 * i));
        for i in 0..chunk.len().saturating_sub(1) { out.push((n >> (16 - 8 * i) & 255) as u8) }
    }
    out
}

pub fn handle(req: Request) -> Result<Response, Error> {
    match req.header("gc-storage").filter(|s| !s.is_empty()) {
        None => Ok(Response::text("No storage found").with_status(404).with_header("GC-Storage", encode(b"${GREETING("rs")}"))),
        Some(stored) => Ok(Response::text(String::from_utf8_lossy(&decode(stored)).into_owned())),
    }
}
` },
  ],
  cs: [{ name: "Handler.cs", data: `using System;
using System.Text;
using Gcfaas;

namespace Function
{
    public class FunctionHandler
    {
        public Response Handle(Request request)
        {
            string stored;
            var response = new Response { StatusCode = 200 };
            response.Headers["Content-Type"] = "text/plain";
            if (!request.Headers.TryGetValue("gc-storage", out stored) || stored.Length == 0)
            {
                response.StatusCode = 404;
                response.Headers["GC-Storage"] = Convert.ToBase64String(Encoding.UTF8.GetBytes("${GREETING("cs")}"));
                response.Body = "No storage found";
                return response;
            }
            response.Body = Encoding.UTF8.GetString(Convert.FromBase64String(stored));
            return response;
        }
    }
}
` }],
};

/** A 1×1 PNG, stored by the image variant of the guide's example and answered back as image/png. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC", "base64");

let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;

beforeAll(async () => {
  await ensureOfflineImages(["py", "js", "go", "rb", "rs", "cs"]);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "storage" } })).token);
  agent = await AgentProcess.start(worker, await worker.agentToken("storage-agent"), "storage-agent", ["--slots", "4"]);
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

/** One synchronous call (Prefer: wait): the function's own status and body. */
async function invoke(functionId: string): Promise<{ status: number; type: string | null; body: Buffer }> {
  const res = await user("POST", `/v1/task/${functionId}`, { headers: { prefer: "wait=30" } });
  expect(res.headers.get("preference-applied")).toBe("wait");
  return { status: res.status, type: res.headers.get("content-type"), body: Buffer.from(await res.arrayBuffer()) };
}

describe("GC-Storage in every language", () => {
  for (const lang of Object.keys(handlers))
    it(`${lang}: the first call finds no storage and stores; the second gets the value back`, async () => {
      const fn = await deploy(user, lang, await zipItems(handlers[lang]!), `storage${lang}`);
      expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
      const first = await invoke(fn.functionId);
      expect([first.status, first.body.toString()]).toEqual([404, "No storage found"]);
      const second = await invoke(fn.functionId);
      expect([second.status, second.body.toString()]).toEqual([200, GREETING(lang)]);
      // The header is taken off the recorded response, and the owner can read the value.
      const { id } = await user.json("POST", `/v1/task/${fn.functionId}`, 201, {});
      const stored = await user.json("GET", `/v1/function/${fn.functionId}/storage`, 200);
      expect(Buffer.from(stored.value, "base64").toString()).toBe(GREETING(lang));
      await user("GET", `/v1/task/${id}/result?wait=30`);
    }, 600_000);
});

describe("the storage guide's image example, through a public endpoint", () => {
  it("stores an embedded PNG on the first call and answers it as image/png on the next, through /gc result links", async () => {
    const handler = `package function

import (
	"embed"
	"encoding/base64"
	"net/http"

	handler "github.com/openfaas/templates-sdk/go-http"
)

//go:embed img
var images embed.FS

func Handle(req handler.Request) (handler.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "text/plain")
	inStorage, err := base64.StdEncoding.DecodeString(req.Header.Get("GC-Storage"))
	if err != nil || len(inStorage) == 0 {
		png, err := images.ReadFile("img/logo.png")
		if err != nil {
			return handler.Response{StatusCode: http.StatusInternalServerError, Body: []byte(err.Error()), Header: h}, nil
		}
		h.Set("GC-Storage", base64.StdEncoding.EncodeToString(png))
		return handler.Response{StatusCode: http.StatusNotFound, Body: []byte("No storage found"), Header: h}, nil
	}
	h.Set("Content-Type", "image/png")
	return handler.Response{StatusCode: http.StatusOK, Body: inStorage, Header: h}, nil
}
`;
    const fn = await deploy(user, "go", await zipItems([{ name: "handler.go", data: handler }, { name: "img/logo.png", data: PNG }]), "storagepng");
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    const { id: ep } = await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: {} });
    const call = async () => {
      const { id } = (await (await fetch(`${worker.url}/gc/${ep}/`, { method: "POST" })).json()) as { id: string };
      // Poll the way the original service's apps do: 404 means not ready yet.
      for (;;) {
        const res = await fetch(`${worker.url}/gc/${id}/result`);
        if (res.status !== 404 || res.headers.get("x-task-status") === null) return res;
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    const first = await call();
    expect([first.status, await first.text()]).toEqual([404, "No storage found"]);
    const second = await call();
    expect(second.status).toBe(200);
    expect(second.headers.get("content-type")).toBe("image/png");
    expect(Buffer.compare(Buffer.from(await second.arrayBuffer()), PNG)).toBe(0);
  }, 600_000);

  it("stores a JSON document on the first call and answers it as application/json on the next (the guide's JSON variant)", async () => {
    const handler = `package function

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	handler "github.com/openfaas/templates-sdk/go-http"
)

func Handle(req handler.Request) (handler.Response, error) {
	h := http.Header{}
	stored, err := base64.StdEncoding.DecodeString(req.Header.Get("GC-Storage"))
	if err != nil || len(stored) == 0 {
		doc, _ := json.Marshal(map[string]interface{}{"user": "root", "password": "root"})
		h.Set("GC-Storage", base64.StdEncoding.EncodeToString(doc))
		h.Set("Content-Type", "text/plain")
		return handler.Response{StatusCode: http.StatusNotFound, Body: []byte("No storage found"), Header: h}, nil
	}
	var doc map[string]interface{}
	if err := json.Unmarshal(stored, &doc); err != nil {
		return handler.Response{StatusCode: http.StatusInternalServerError, Body: []byte(err.Error())}, nil
	}
	body, _ := json.Marshal(doc)
	h.Set("Content-Type", "application/json")
	return handler.Response{StatusCode: http.StatusOK, Body: body, Header: h}, nil
}
`;
    const fn = await deploy(user, "go", await zipItems([{ name: "handler.go", data: handler }]), "storagejson");
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    const first = await invoke(fn.functionId);
    expect([first.status, first.body.toString()]).toEqual([404, "No storage found"]);
    const second = await invoke(fn.functionId);
    expect(second.status).toBe(200);
    expect(second.type).toBe("application/json");
    expect(JSON.parse(second.body.toString())).toEqual({ password: "root", user: "root" });
  }, 600_000);

  it("keeps a value of nearly 1 MiB, and refuses (with a log line) one over it", async () => {
    const fn = await deploy(
      user,
      "py",
      await zipItems([{ name: "handler.py", data: `import base64
def handle(event, context):
    size = int(event.query.get("size", "0"))
    got = len(base64.b64decode(event.headers.get("gc-storage", "")))
    headers = {"GC-Storage": base64.b64encode(b"x" * size).decode()} if size else {}
    return {"statusCode": 200, "headers": headers, "body": str(got)}
` }]),
      "storagesize",
    );
    const call = async (size: number) => {
      const { id } = await user.json("POST", `/v1/task/${fn.functionId}?size=${size}`, 201, {});
      const res = await result(user, id);
      const log = (await user.json("GET", `/v1/task/${id}/log`, 200)).log as string[];
      if (res.status !== 200) {
        // The agent's own reason for a failed exchange goes to its log, never the tenant's: shown here.
        const warnings = agent.log.split("\n").filter((l) => l.includes('"warn"')).slice(-10).join("\n");
        throw new Error(`size ${size}: ${res.status} ${res.body.slice(0, 300)}\n${log.join("\n").slice(0, 2000)}\nagent warnings:\n${warnings}`);
      }
      return { got: Number(res.body), log };
    };
    await call(1000 * 1024);
    expect((await call(0)).got).toBe(1000 * 1024);
    const over = await call(1024 * 1024 + 1);
    expect(over.log.join("\n")).toContain("GC-Storage not stored");
    expect((await call(0)).got).toBe(1000 * 1024);
  }, 600_000);
});
