import { expect } from "vitest";
import { defineLanguageSuite } from "./helpers/language-suite.js";

defineLanguageSuite({
  lang: "py",
  name: "Python",
  broken: { files: [{ name: "handler.py", data: "def handle(event, context)\n    return 1\n" }], message: /SyntaxError/ },
  dependency: {
    query: { region: "eu", size: "3" },
    check: (status, body) => {
      expect(status).toBe(200);
      expect(body).toMatch(/\|\s*region\s*\|\s*eu\s*\|/);
      expect(body).toMatch(/\|\s*size\s*\|\s*3\s*\|/);
    },
  },
});
