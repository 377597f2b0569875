import { expect } from "vitest";
import { defineLanguageSuite } from "./helpers/language-suite.js";

const cargo = '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngcfaas = "0.1"\n';
const broken = "use gcfaas::{Error, Request, Response};\n\npub fn handle(req: Request) -> Result<Response, Error> {\n    Ok(Response::text(undefined_greeting))\n}\n";

defineLanguageSuite({
  lang: "rs",
  name: "Rust",
  broken: {
    files: [
      { name: "Cargo.toml", data: cargo },
      { name: "src/lib.rs", data: broken },
    ],
    message: /cannot find value `undefined_greeting` in this scope/,
  },
  dependency: {
    query: { text: "Hello big World" },
    check: (status, body) => {
      expect(status).toBe(200);
      expect(JSON.parse(body)).toEqual({ snake: "hello_big_world", kebab: "hello-big-world", camel: "HelloBigWorld" });
    },
  },
});
