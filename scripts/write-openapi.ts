/**
 * Writes the OpenAPI document the Worker serves at /v1/openapi.json to a file, for tools that read
 * files (Redocly's lint in scripts/test.sh). Same code, no Worker needed.
 *
 *   node --import tsx scripts/write-openapi.ts [file]    default .state/openapi.json
 */
import fs from "node:fs";
import path from "node:path";
import { apiDocument } from "./lib/api-document.js";

const file = path.resolve(process.argv[2] ?? ".state/openapi.json");
fs.mkdirSync(path.dirname(file), { recursive: true });
fs.writeFileSync(file, `${JSON.stringify(await apiDocument("http://127.0.0.1:8787"), null, 2)}\n`);
console.log(`wrote ${path.relative(process.cwd(), file)}`);
