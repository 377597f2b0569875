import type { Command } from "../command.js";
import { cmd } from "../cli-name.js";
import { TEMPLATES, templateLangs } from "../templates.js";

export const templates: Command = {
  name: "templates",
  summary: "list the templates init can start a function from",
  usage: "templates",
  examples: ["gcfaas templates", "gcfaas init visits --lang py --template counter"],
  args: [0, 0],
  async run(ctx) {
    const rows = TEMPLATES.map((t) => ({ name: t.name, langs: templateLangs(t), summary: t.summary }));
    ctx.out.result(rows, () => {
      ctx.out.table(rows, [
        { title: "TEMPLATE", value: (r) => r.name },
        { title: "LANGUAGES", value: (r) => r.langs.join(",") },
        { title: "WHAT IT DOES", value: (r) => r.summary },
      ]);
      ctx.out.line(`start one with: ${cmd("init <dir> --lang <code> --template <name>")}`);
    });
  },
};
