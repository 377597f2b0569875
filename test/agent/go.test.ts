import { expect } from "vitest";
import { defineLanguageSuite } from "./helpers/language-suite.js";

const broken = `package function

import handler "github.com/openfaas/templates-sdk/go-http"

func Handle(req handler.Request) (handler.Response, error) {
	return undefinedResponse, nil
}
`;

defineLanguageSuite({
  lang: "go",
  name: "Go",
  broken: { files: [{ name: "handler.go", data: broken }], message: /undefined: undefinedResponse/ },
  dependency: {
    query: {},
    check: (status, body) => {
      expect(status).toBe(200);
      const parsed = JSON.parse(body) as { uuid: string; version: number };
      expect(parsed.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(parsed.version).toBe(4);
    },
  },
});
