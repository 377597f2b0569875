/**
 * Produces the Worker's static assets folder (wrangler.toml `[assets]`): the pages in site/ and
 * the OpenAPI viewer at /docs, Swagger UI copied from the pinned swagger-ui-dist package. Run by
 * wrangler's `[build]` command before `wrangler deploy`, `wrangler dev` and the dry-run bundle the
 * local start uses, and by vitest.config.ts for the Worker tests.
 *
 * Built, not committed: a 1.5 MB minified third-party bundle in the repository would only repeat
 * node_modules and could drift from the version package-lock.json pins.
 *
 *   node --import tsx scripts/build-assets.ts
 */
import fs from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
export const ASSETS_DIR = path.join(ROOT, "dist/assets");
const SWAGGER_UI = path.join(ROOT, "node_modules/swagger-ui-dist");
/** What the page needs of the package, and the licence notices that must travel with it (Apache-2.0). */
const SWAGGER_UI_FILES = ["swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png", "LICENSE", "NOTICE"];

export function buildAssets(): string {
  const sources = new Map<string, string>();
  const walk = (dir: string, rel = "") => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }))
      if (e.isDirectory()) walk(path.join(dir, e.name), path.join(rel, e.name));
      else sources.set(path.join(rel, e.name), path.join(dir, e.name));
  };
  walk(path.join(ROOT, "site"));
  for (const f of SWAGGER_UI_FILES) sources.set(path.join("docs", f), path.join(SWAGGER_UI, f));
  for (const [rel, from] of sources) copyIfChanged(from, path.join(ASSETS_DIR, rel));
  return ASSETS_DIR;
}

/**
 * Local Workers that are running serve this folder while another start builds it again (the
 * end-to-end suite starts several): a file is replaced only when it changed, and then at once
 * (written beside it, renamed over it), so that no reader ever sees it missing or half written.
 */
function copyIfChanged(from: string, to: string) {
  const content = fs.readFileSync(from);
  if (fs.existsSync(to) && fs.readFileSync(to).equals(content)) return;
  fs.mkdirSync(path.dirname(to), { recursive: true });
  const tmp = `${to}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, content);
  fs.renameSync(tmp, to);
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) console.log(`static assets in ${path.relative(process.cwd(), buildAssets())}`);
