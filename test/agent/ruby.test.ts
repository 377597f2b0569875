import { expect } from "vitest";
import { defineLanguageSuite } from "./helpers/language-suite.js";

defineLanguageSuite({
  lang: "rb",
  name: "Ruby",
  broken: { files: [{ name: "handler.rb", data: "def handle(event, context)\n  if\nend\n" }], message: /syntax error/ },
  dependency: {
    query: { name: "Ada" },
    check: (status, body) => {
      expect(status).toBe(200);
      expect(body).toBe("Hello, Ada! You sent 1 query parameters.");
    },
  },
});
