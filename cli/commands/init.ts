import fs from "node:fs/promises";
import path from "node:path";
import type { Command } from "../command.js";
import { cmd } from "../cli-name.js";
import { UsageError } from "../errors.js";
import { LANG_CODES, LANG_NAMES, parseLangCode } from "../langs.js";
import { nameFromFolder, PROJECT_FILE, writeProject } from "../project.js";
import { writeTemplate } from "../templates.js";

export const init: Command = {
  name: "init",
  summary: "create a function folder from a language template",
  usage: `init <dir> --lang ${LANG_CODES.join("|")} [--name NAME] [--force]`,
  help: [
    `--lang CODE    language: ${LANG_CODES.map((c) => `${c} (${LANG_NAMES[c]})`).join(", ")}`,
    "--name NAME    function name used by the first deploy (default: the folder name without what is not a letter or digit; init says which)",
    "--force        write into a folder that is not empty (template files are overwritten)",
    "",
    `Also writes ${PROJECT_FILE}, where deploy remembers the function id; it is never uploaded.`,
  ],
  examples: ["gcfaas init hello --lang py", "gcfaas init api --lang go --name greeter"],
  options: { lang: { type: "string", short: "l" }, name: { type: "string", short: "n" }, force: { type: "boolean" } },
  args: [1, 1],
  async run(ctx, a) {
    const dirArg = a.pos(0, "<dir>");
    const langArg = a.str("lang");
    if (!langArg) throw new UsageError(`missing --lang (one of ${LANG_CODES.join(", ")})`, "init");
    const lang = parseLangCode(langArg, "init");
    const dir = path.resolve(ctx.cwd, dirArg);
    const name = a.str("name") ?? nameFromFolder(dir);
    if (!/^[A-Za-z0-9]{1,64}$/.test(name)) throw new UsageError(`--name must be 1 to 64 letters or digits, got "${name}"`, "init");
    // Function names are letters and digits only: a folder such as hello-py cannot be the name as is.
    const renamed = !a.has("name") && name !== path.basename(dir) ? name : undefined;
    const existing = await fs.readdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return [] as string[];
      if (err.code === "ENOTDIR") throw new UsageError(`${dirArg} exists and is not a folder`, "init");
      throw err;
    });
    if (existing.length > 0 && !a.flag("force")) throw new UsageError(`${dirArg} is not empty; use --force to write the template into it anyway`, "init");
    const files = await writeTemplate(lang, dir);
    await writeProject(dir, { name, lang });
    ctx.out.result({ dir, lang, name, files: [...files, PROJECT_FILE] }, () => {
      ctx.out.line(`created a ${LANG_NAMES[lang]} function in ${dirArg}:`);
      for (const f of files) ctx.out.line(`  ${f}`);
      if (renamed) ctx.out.line(`the function will be named ${renamed}: names are 1 to 64 letters or digits, and "${path.basename(dir)}" is not one (choose another with --name)`);
      else ctx.out.line(`the function will be named ${name}`);
      ctx.out.line(`next: ${cmd(`deploy ${dirArg}`)}`);
    });
  },
};
