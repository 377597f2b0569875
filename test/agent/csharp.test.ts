import { expect } from "vitest";
import { defineLanguageSuite } from "./helpers/language-suite.js";

const broken = "using Gcfaas;\n\nnamespace Function\n{\n    public class FunctionHandler\n    {\n        public Response Handle(Request request)\n        {\n            return new Response()\n        }\n    }\n}\n";

defineLanguageSuite({
  lang: "cs",
  name: "C#",
  broken: { files: [{ name: "Handler.cs", data: broken }], message: /Handler\.cs\(\d+,\d+\): error CS\d+: Unexpected symbol/ },
  dependency: {
    query: {},
    check: (status, body) => {
      expect(status).toBe(200);
      expect(JSON.parse(body)).toEqual({ keys: [], count: 0 });
    },
  },
});
