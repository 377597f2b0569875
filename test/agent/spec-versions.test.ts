import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import type { Lang } from "../../agent/runtimes/languages.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir } from "./helpers/functions.js";
import type { ZipItem } from "../support/zip.js";

/**
 * Code written for the specification's runtime versions (Go 1.21, Python 3.12, Node.js 18,
 * Ruby 2.7, Rust 1.78, C# 6) builds and runs on the offline images: each function below uses
 * what its version brought and reports the version it runs on.
 */
const cases: { lang: Lang; name: string; files: ZipItem[]; expect: RegExp }[] = [
  {
    lang: "go",
    name: "Go 1.21: slices, the min builtin and clear",
    files: [
      { name: "go.mod", data: "module example.com/fn\n\ngo 1.21\n" },
      {
        name: "handler.go",
        data: `package function

import (
	"fmt"
	"runtime"
	"slices"

	handler "github.com/openfaas/templates-sdk/go-http"
)

func Handle(req handler.Request) (handler.Response, error) {
	xs := []int{3, 1, 2}
	slices.Sort(xs)
	m := map[string]int{"a": 1}
	clear(m)
	body := fmt.Sprintf("%s sorted=%v min=%d cleared=%d", runtime.Version(), xs, min(4, 2, 9), len(m))
	return handler.Response{StatusCode: 200, Body: []byte(body)}, nil
}
`,
      },
    ],
    expect: /^go1\.21\.\d+ sorted=\[1 2 3\] min=2 cleared=0$/,
  },
  {
    lang: "py",
    name: "Python 3.12: PEP 695 type parameters and type aliases",
    files: [
      {
        name: "handler.py",
        data: `import sys

type Pair[T] = tuple[T, T]

def first[T](xs: list[T]) -> T:
    return xs[0]

def handle(event, context):
    p: Pair[int] = (first([7, 8]), 9)
    return f"{sys.version_info.major}.{sys.version_info.minor} first={p[0]}"
`,
      },
    ],
    expect: /^3\.(1[2-9]) first=7$/,
  },
  {
    lang: "js",
    name: "Node.js 18: findLast, structuredClone and a global fetch",
    files: [
      {
        name: "handler.js",
        data: `module.exports = async () => {
  const last = [1, 2, 3, 4].findLast((n) => n % 2 === 1);
  const copy = structuredClone({ a: [1] });
  return \`\${process.version.split(".")[0]} last=\${last} clone=\${copy.a[0]} fetch=\${typeof fetch}\`;
};
`,
      },
    ],
    expect: /^v18 last=3 clone=1 fetch=function$/,
  },
  {
    lang: "rb",
    name: "Ruby 2.7: numbered block parameters, filter_map, and a hash passed as keywords",
    files: [
      {
        name: "handler.rb",
        data: `def area(width:, height:)
  width * height
end

def handle(_event, _context)
  odds = [1, 2, 3].filter_map { _1 * 10 if _1.odd? }
  # Ruby 2.7 still turns a trailing hash into keyword arguments (3.0 does not).
  dims = { width: 2, height: 3 }
  "#{RUBY_VERSION[0, 3]} odds=#{odds.join(',')} area=#{area(dims)}"
end
`,
      },
    ],
    expect: /^2\.7 odds=10,30 area=6$/,
  },
  {
    lang: "rs",
    name: "Rust 1.78: let-else, Option::is_some_and and div_ceil",
    files: [
      { name: "Cargo.toml", data: '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\nrust-version = "1.78"\n\n[dependencies]\ngcfaas = "0.1"\n' },
      {
        name: "src/lib.rs",
        data: `use gcfaas::{Error, Request, Response};

pub fn handle(_req: Request) -> Result<Response, Error> {
    let Some(n) = "7".parse::<u32>().ok() else { return Err("no number".into()) };
    let big = Some(n).is_some_and(|v| v > 5);
    Ok(Response::text(format!("big={} pages={}", big, n.div_ceil(3))))
}
`,
      },
    ],
    expect: /^big=true pages=3$/,
  },
  {
    lang: "cs",
    name: "C# 6: interpolated strings, nameof, expression-bodied members and ?.",
    files: [
      {
        name: "Handler.cs",
        data: `using System;
using Gcfaas;

namespace Function
{
    public class FunctionHandler
    {
        string Label => nameof(Handle);

        public Response Handle(Request request)
        {
            string missing = null;
            var response = new Response { StatusCode = 200 };
            response.Body = $"{Label} len={missing?.Length ?? -1} sum={1 + 2}";
            return response;
        }
    }
}
`,
      },
    ],
    expect: /^Handle len=-1 sum=3$/,
  },
];

let runner: Runner;

beforeAll(async () => {
  await ensureEnvironment(cases.map((c) => c.lang));
  runner = await Runner.create({ stateDir: path.join(await tempDir("state-versions"), "state"), agentId: "test-versions" });
});

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

describe("the specification's runtime versions", () => {
  for (const c of cases)
    it(`${c.name} builds and runs`, async () => {
      const built = await buildFiles(c.lang, c.files);
      expect(built.result.ok, built.log.join("\n")).toBe(true);
      const res = await runner.invoke(call(built, c.lang, {}));
      expect(res.status, res.log.join("\n")).toBe(200);
      expect(res.body.toString().replace(/^"|"$/g, "")).toMatch(c.expect);
    });
});
