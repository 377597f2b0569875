import fs from "node:fs/promises";
import path from "node:path";
import type { Command } from "../command.js";
import { cmd } from "../cli-name.js";
import { UsageError } from "../errors.js";
import { LANG_CODES, LANG_NAMES, parseLangCode } from "../langs.js";
import { nameFromFolder, PROJECT_FILE, writeProject } from "../project.js";
import { DEFAULT_TEMPLATE, findTemplate, templateLangs, TEMPLATES, tryWith, writeTemplate } from "../templates.js";

export const init: Command = {
  name: "init",
  summary: "create a function folder from a template (gcfaas templates lists them)",
  usage: `init <dir> --lang ${LANG_CODES.join("|")} [--template NAME] [--name NAME] [--force]`,
  help: [
    `--lang CODE    language: ${LANG_CODES.map((c) => `${c} (${LANG_NAMES[c]})`).join(", ")}`,
    `--template T   ${TEMPLATES.map((t) => t.name).join(", ")} (default ${DEFAULT_TEMPLATE}); \`gcfaas templates\` says what each does`,
    "--name NAME    function name used by the first deploy (default: the folder name without what is not a letter or digit; init says which)",
    "--force        write into a folder that is not empty (template files are overwritten)",
    "",
    `Also writes ${PROJECT_FILE}, where deploy remembers the function id; it is never uploaded.`,
  ],
  examples: ["gcfaas init hello --lang py", "gcfaas init api --lang go --name greeter", "gcfaas init visits --lang js --template counter"],
  options: { lang: { type: "string", short: "l" }, template: { type: "string", short: "t" }, name: { type: "string", short: "n" }, force: { type: "boolean" } },
  args: [1, 1],
  async run(ctx, a) {
    const dirArg = a.pos(0, "<dir>");
    const langArg = a.str("lang");
    if (!langArg) throw new UsageError(`missing --lang (one of ${LANG_CODES.join(", ")})`, "init");
    const lang = parseLangCode(langArg, "init");
    const templateName = a.str("template") ?? DEFAULT_TEMPLATE;
    const template = findTemplate(templateName);
    if (!template) throw new UsageError(`unknown template "${templateName}"; use one of ${TEMPLATES.map((t) => t.name).join(", ")} (\`${cmd("templates")}\` describes them)`, "init");
    const langs = templateLangs(template);
    if (!langs.includes(lang)) throw new UsageError(`the ${template.name} template exists in ${langs.map((l) => `${l} (${LANG_NAMES[l]})`).join(", ")}, not in ${lang}`, "init");
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
    const files = await writeTemplate(lang, dir, template.name);
    await writeProject(dir, { name, lang });
    ctx.out.result({ dir, lang, name, template: template.name, files: [...files, PROJECT_FILE] }, () => {
      ctx.out.line(`created a ${LANG_NAMES[lang]} function in ${dirArg} from the ${template.name} template:`);
      // A vendored dependency is many files: its folder is named once.
      const shown = files.filter((f) => !/^vendor\/|^lib\//.test(f));
      for (const f of shown) ctx.out.line(`  ${f}`);
      const vendored = files.length - shown.length;
      if (vendored) ctx.out.line(`  and ${vendored} vendored file${vendored === 1 ? "" : "s"} of its dependency (${[...new Set(files.filter((f) => !shown.includes(f)).map((f) => f.split("/")[0]))].join(", ")}/)`);
      if (renamed) ctx.out.line(`the function will be named ${renamed}: names are 1 to 64 letters or digits, and "${path.basename(dir)}" is not one (choose another with --name)`);
      else ctx.out.line(`the function will be named ${name}`);
      const args = tryWith(template, lang);
      ctx.out.line(`next: ${cmd(`deploy ${dirArg}`)}, then ${cmd(`invoke ${name}${args ? ` ${args}` : ""}`)}`);
    });
  },
};
