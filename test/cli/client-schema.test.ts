import fs from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { CLIENT_SCHEMA_FILE, clientSchemaText } from "../../scripts/gen-client.js";

// The typed client's types are generated from the document and committed; a change to the
// document (worker/openapi/, shared/schemas/) that is not regenerated would leave the client and
// the CLI checked against an API that no longer exists.
describe("client/schema.d.ts", () => {
  it("is what `npm run gen:client` makes from the document the Worker serves today", async () => {
    const committed = await fs.readFile(CLIENT_SCHEMA_FILE, "utf8");
    expect(committed === (await clientSchemaText()), "client/schema.d.ts is stale: run `npm run gen:client` and commit it").toBe(true);
  });
});
