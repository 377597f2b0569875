import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import type { Lang } from "../../agent/runtimes/languages.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir } from "./helpers/functions.js";
import type { ZipItem } from "../support/zip.js";

/**
 * Every language hands the handler the caller's exact bytes in its own idiom (Go []byte, Rust
 * Vec<u8>, Python bytes, Node.js Buffer, Ruby a binary String, C# byte[]) beside the text form; each
 * handler here answers those bytes back with the Content-Type it was given.
 */
const echo: Record<Lang, ZipItem[]> = {
  py: [{ name: "handler.py", data: `def handle(event, context):
    return {"statusCode": 200, "headers": {"Content-Type": "application/octet-stream", "X-Got-Type": event.headers.get("content-type", ""), "X-Text-Length": str(len(event.body))}, "body": event.raw_body}
` }],
  js: [{ name: "handler.js", data: `module.exports = async (event) => ({
  statusCode: 200,
  headers: { "Content-Type": "application/octet-stream", "X-Got-Type": event.headers["content-type"] || "", "X-Text-Length": String(event.body.length) },
  body: event.rawBody,
});
` }],
  rb: [{ name: "handler.rb", data: `def handle(event, _context)
  { statusCode: 200, headers: { "Content-Type" => "application/octet-stream", "X-Got-Type" => event.headers["content-type"].to_s, "X-Text-Length" => event.body.length.to_s }, body: event.raw_body }
end
` }],
  go: [{ name: "handler.go", data: `package function

import (
	"net/http"

	handler "github.com/openfaas/templates-sdk/go-http"
)

func Handle(req handler.Request) (handler.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Got-Type", req.Header.Get("Content-Type"))
	return handler.Response{StatusCode: 200, Body: req.Body, Header: h}, nil
}
` }],
  rs: [
    { name: "Cargo.toml", data: '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngcfaas = "0.1"\n' },
    { name: "src/lib.rs", data: `use gcfaas::{Error, Request, Response};

pub fn handle(req: Request) -> Result<Response, Error> {
    let got = req.header("content-type").unwrap_or("").to_string();
    Ok(Response::new(200).with_header("Content-Type", "application/octet-stream").with_header("X-Got-Type", got).with_body(req.body.clone()))
}
` },
  ],
  cs: [{ name: "Handler.cs", data: `using Gcfaas;

namespace Function
{
    public class FunctionHandler
    {
        public Response Handle(Request request)
        {
            var response = new Response { StatusCode = 200 };
            string type;
            response.Headers["Content-Type"] = "application/octet-stream";
            response.Headers["X-Got-Type"] = request.Headers.TryGetValue("content-type", out type) ? type : "";
            response.BodyBytes = request.BodyBytes;
            return response;
        }
    }
}
` }],
};

/** Every byte value, and invalid UTF-8 sequences a text conversion would mangle. */
const BYTES = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x00])]);

let runner: Runner;

beforeAll(async () => {
  await ensureEnvironment(Object.keys(echo) as Lang[]);
  runner = await Runner.create({ stateDir: path.join(await tempDir("state-raw"), "state"), agentId: "test-raw" });
});

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

describe("raw request bodies", () => {
  for (const lang of Object.keys(echo) as Lang[])
    it(`${lang}: the handler gets the exact bytes and the caller's Content-Type, and answers bytes byte for byte`, async () => {
      const built = await buildFiles(lang, echo[lang]);
      expect(built.result.ok, built.log.join("\n")).toBe(true);
      const res = await runner.invoke(call(built, lang, { method: "POST", headers: { "content-type": "image/x-test" }, body: BYTES }));
      expect(res.status, res.log.join("\n")).toBe(200);
      expect(res.headers["x-got-type"]).toBe("image/x-test");
      expect(Buffer.compare(res.body, BYTES)).toBe(0);
    });
});
