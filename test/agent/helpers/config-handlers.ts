import type { Lang } from "../../../agent/runtimes/languages.js";
import type { ZipItem } from "../../support/zip.js";

/**
 * Per language, a function that answers what it sees of GREETING and API_KEY in its process
 * environment (null when unset), whether the configuration header reached its event, and, where
 * the language reads it when the handler loads, API_KEY as it was then (`atLoad`).
 */
export const CONFIG_HANDLERS: Record<Lang, ZipItem[]> = {
  py: [
    {
      name: "handler.py",
      data: `import os

AT_LOAD = os.environ.get("API_KEY")


def handle(event, context):
    return {
        "greeting": os.environ.get("GREETING"),
        "apiKey": os.environ.get("API_KEY"),
        "atLoad": AT_LOAD,
        "sawHeader": "x-gcfaas-env" in event.headers,
    }
`,
    },
  ],
  js: [
    {
      name: "handler.js",
      data: `const atLoad = process.env.API_KEY ?? null;
module.exports = async (event) => ({
  greeting: process.env.GREETING ?? null,
  apiKey: process.env.API_KEY ?? null,
  atLoad,
  sawHeader: "x-gcfaas-env" in event.headers,
});
`,
    },
  ],
  rb: [
    {
      name: "handler.rb",
      data: `AT_LOAD = ENV["API_KEY"]

def handle(event, _context)
  { greeting: ENV["GREETING"], apiKey: ENV["API_KEY"], atLoad: AT_LOAD, sawHeader: event.headers.key?("x-gcfaas-env") }
end
`,
    },
  ],
  go: [
    { name: "go.mod", data: "module handler/function\n\ngo 1.19\n" },
    {
      name: "handler.go",
      data: `package function

import (
	"encoding/json"
	"net/http"
	"os"

	handler "github.com/openfaas/templates-sdk/go-http"
)

func env(name string) interface{} {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return nil
}

func Handle(req handler.Request) (handler.Response, error) {
	body, err := json.Marshal(map[string]interface{}{
		"greeting":  env("GREETING"),
		"apiKey":    env("API_KEY"),
		"sawHeader": req.Header.Get("X-Gcfaas-Env") != "",
	})
	return handler.Response{StatusCode: 200, Body: body, Header: http.Header{"Content-Type": {"application/json"}}}, err
}
`,
    },
  ],
  rs: [
    { name: "Cargo.toml", data: '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngcfaas = "0.1"\n' },
    {
      name: "src/lib.rs",
      data: `use gcfaas::{json_string, Error, Request, Response};

fn env(name: &str) -> String {
    std::env::var(name).map(|v| json_string(&v)).unwrap_or_else(|_| "null".to_string())
}

pub fn handle(req: Request) -> Result<Response, Error> {
    Ok(Response::json(format!(
        "{{\\"greeting\\":{},\\"apiKey\\":{},\\"sawHeader\\":{}}}",
        env("GREETING"),
        env("API_KEY"),
        req.header("x-gcfaas-env").is_some()
    )))
}
`,
    },
  ],
  cs: [
    {
      name: "Handler.cs",
      data: `using System;
using Gcfaas;

namespace Function
{
    public class FunctionHandler
    {
        public Response Handle(Request request)
        {
            var response = new Response { StatusCode = 200 };
            response.Headers["Content-Type"] = "application/json";
            response.Body = "{\\"greeting\\":" + Env("GREETING") + ",\\"apiKey\\":" + Env("API_KEY")
                + ",\\"sawHeader\\":" + (request.Headers.ContainsKey("x-gcfaas-env") ? "true" : "false") + "}";
            return response;
        }

        static string Env(string name)
        {
            var v = Environment.GetEnvironmentVariable(name);
            return v == null ? "null" : "\\"" + v.Replace("\\\\", "\\\\\\\\").Replace("\\"", "\\\\\\"") + "\\"";
        }
    }
}
`,
    },
  ],
};
