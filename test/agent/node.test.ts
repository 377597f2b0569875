import { expect } from "vitest";
import { defineLanguageSuite } from "./helpers/language-suite.js";

defineLanguageSuite({
  lang: "js",
  name: "Node.js",
  broken: { files: [{ name: "handler.js", data: "module.exports = async (event => {\n  return 1;\n};\n" }], message: /SyntaxError/ },
  dependency: {
    query: { duration: "2 days" },
    check: (status, body) => {
      expect(status).toBe(200);
      expect(JSON.parse(body)).toEqual({ input: "2 days", milliseconds: 172_800_000 });
    },
  },
});
