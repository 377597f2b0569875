import { ok } from "../api-client.js";
import path from "node:path";
import { followBuild } from "../build-follow.js";
import { uploadBuild } from "../build-upload.js";
import { defined, type Command } from "../command.js";
import { ApiError, CliError, UsageError } from "../errors.js";
import { apiLang, LANG_CODES, LANG_NAMES, parseLangCode, type LangCode } from "../langs.js";
import { detectLang, isDirectory, nameFromFolder, PROJECT_FILE, readProject, writeProject } from "../project.js";
import { zipFolderContents } from "../zip.js";
import { runnable } from "../cli-name.js";
import { checkEntryAtTop, existingFunctionFor } from "../deploy-target.js";
import { fmtTime } from "../output.js";
import { functionIdFor } from "../function-lookup.js";

const MAX_ZIP_BYTES = 50 * 1024 * 1024;

interface FunctionInfo {
  id: string;
  name: string;
  lang: string;
}

export const deploy: Command = {
  name: "deploy",
  summary: "zip a function folder, create or update the function, build it and follow the build",
  usage: "deploy <dir> [--name NAME] [--lang CODE] [--function ID] [--description TEXT] [--no-wait] [--max-wait SECONDS]",
  help: [
    "--name NAME          function name for a new function; renames an existing one",
    `--lang CODE          ${LANG_CODES.join("|")}; default: ${PROJECT_FILE}, else guessed from the files`,
    `--function ID        deploy to this function (default: the id remembered in ${PROJECT_FILE})`,
    "--description TEXT   function description (printable ASCII, at most 80 characters)",
    "--no-wait            upload and return; do not follow the build",
    "--max-wait SECONDS   give up following after this long (default 900)",
    "--new                create a new function even when one of this name exists already",
    "--keep-failed        keep a function this deploy created when its first build fails",
    "",
    `Without a function id, the one function of the folder's name and language is updated; if there is`,
    `none a new function is created. Its id is saved in <dir>/${PROJECT_FILE}, so the next deploy of the`,
    "folder updates the same function. When the first build of a function created here fails, the",
    "function is removed again (--keep-failed keeps it), so that no function without a build is left.",
    " The folder's contents are zipped (not the",
    `folder itself; ${PROJECT_FILE} and .git are left out). Exits 1 when the build FAILED.`,
  ],
  examples: ["gcfaas deploy hello", "gcfaas deploy . --name greeter --lang py", "gcfaas deploy build/ --function 01jc9x2k7m"],
  options: {
    name: { type: "string", short: "n" },
    lang: { type: "string", short: "l" },
    function: { type: "string", short: "f" },
    description: { type: "string" },
    "no-wait": { type: "boolean" },
    "max-wait": { type: "string" },
    new: { type: "boolean" },
    "keep-failed": { type: "boolean" },
  },
  args: [1, 1],
  async run(ctx, a) {
    const dirArg = a.pos(0, "<dir>");
    const dir = path.resolve(ctx.cwd, dirArg);
    if (!(await isDirectory(dir))) throw new UsageError(`${dirArg} is not a folder`, "deploy");
    const maxWait = a.int("max-wait") ?? 900;
    const name = a.str("name");
    if (name !== undefined && !/^[A-Za-z0-9]{1,64}$/.test(name)) throw new UsageError(`--name must be 1 to 64 letters or digits, got "${name}"`, "deploy");
    const langFlag = a.str("lang") === undefined ? undefined : parseLangCode(a.str("lang")!, "deploy");
    const description = a.str("description");

    const project = (await readProject(dir)) ?? {};
    const { zip, files, hash } = await zipFolderContents(dir);
    if (files.length === 0) throw new UsageError(`${dirArg} holds no files to deploy`, "deploy");
    if (zip.length > MAX_ZIP_BYTES) throw new CliError("payload_too_large", `the zip of ${dirArg} is ${(zip.length / 1048576).toFixed(1)} MiB; the limit is 50 MiB`);

    const api = await ctx.api();
    let fn: FunctionInfo;
    let created = false;
    const functionFlag = a.str("function");
    const functionId = functionFlag !== undefined ? await functionIdFor(api, functionFlag) : project.functionId;
    if (functionId) {
      try {
        fn = await ok(api.GET("/v1/function/{id}", { params: { path: { id: functionId } } }));
      } catch (err) {
        if (err instanceof ApiError && err.status === 404 && !a.has("function") && project.functionId)
          throw new ApiError(404, err.code, `the function ${functionId} remembered in ${path.join(dirArg, PROJECT_FILE)} no longer exists`, err.details, `remove functionId from ${PROJECT_FILE} to create a new function`);
        throw err;
      }
      await checkEntryAtTop(dir, dirArg, parseLangCode(fn.lang));
      if (langFlag && langFlag !== fn.lang) ctx.out.note(`warning: function ${fn.id} is ${fn.lang}; --lang ${langFlag} is ignored (the language of a function cannot change)`);
      if ((name !== undefined && name !== fn.name) || description !== undefined) {
        await ok(api.PATCH("/v1/function/{id}", { params: { path: { id: fn.id } }, body: defined({ name: name !== fn.name ? name : undefined, description }) }));
        if (name !== undefined) fn.name = name;
      }
    } else {
      const lang: LangCode | undefined = langFlag ?? project.lang ?? (await detectLang(dir));
      if (!lang) throw new UsageError(`cannot tell the language of ${dirArg}; pass --lang (${LANG_CODES.join(", ")})`, "deploy");
      await checkEntryAtTop(dir, dirArg, lang);
      const fnName = name ?? project.name ?? nameFromFolder(dir);
      const existing = await existingFunctionFor(api, fnName, lang, a.flag("new"));
      if (existing) {
        fn = { id: existing.id, name: existing.name, lang };
        ctx.out.note(`updating function ${fnName} (${existing.id}, created ${fmtTime(existing.createdAt)}), the one of this name; --new makes a second one`);
        if (description !== undefined) await ok(api.PATCH("/v1/function/{id}", { params: { path: { id: fn.id } }, body: { description } }));
      } else {
        const { id } = await ok(api.POST("/v1/function", { body: defined({ name: fnName, description, lang: apiLang(lang), type: "DOCKER" as const }) }));
        fn = { id, name: fnName, lang };
        created = true;
        ctx.out.note(`created function ${fnName} (${id}, ${LANG_NAMES[lang]})`);
      }
    }
    if (project.functionId !== fn.id || project.name !== fn.name || project.lang !== fn.lang) {
      await writeProject(dir, { ...project, functionId: fn.id, name: fn.name, lang: parseLangCode(fn.lang) });
    }

    ctx.out.note(`uploading ${files.length} file${files.length === 1 ? "" : "s"} (${fmtBytes(zip.length)}) to function ${fn.name} (${fn.id})`);
    const buildId = await uploadBuild(api, fn.id, zip);

    if (a.flag("no-wait")) {
      const build = await ok(api.GET("/v1/build/{id}", { params: { path: { id: buildId } } }));
      ctx.out.result(build, () => ctx.out.line(runnable(`build ${buildId} started; follow it with: gcfaas build ${buildId} --follow`)));
      return 0;
    }
    const build = await followBuild(ctx, api, buildId, { maxWaitSeconds: maxWait });
    ctx.out.result(build, () => {
      if (build.status === "SUCCESS") ctx.out.line(runnable(`deployed ${fn.name} (${fn.id})${created ? " (new function)" : ""}; run it with: gcfaas invoke ${dirArg}`));
    });
    // `up` skips a rebuild of content this build was made from.
    if (build.status === "SUCCESS") await writeProject(dir, { ...project, functionId: fn.id, name: fn.name, lang: parseLangCode(fn.lang), sourceHash: hash, buildId });
    if (build.status !== "SUCCESS") {
      ctx.out.stderr.write(`error: build_failed: build ${buildId} of function ${fn.name} (${fn.id}) FAILED${build.log.length ? `: ${build.log[build.log.length - 1]}` : ""}\n`);
      if (created && !a.flag("keep-failed")) {
        await ok(api.DELETE("/v1/function/{id}", { params: { path: { id: fn.id } } }));
        await writeProject(dir, { ...project, functionId: undefined, name: fn.name, lang: parseLangCode(fn.lang) });
        ctx.out.stderr.write(`removed function ${fn.name} (${fn.id}) again: this deploy created it and it has no successful build (keep it with --keep-failed)\n`);
      }
      ctx.out.stderr.write(`hint: ${runnable(`fix the error above, then deploy again with \`gcfaas deploy ${dirArg}\`; the whole log: \`gcfaas build ${buildId} --log\``)}\n`);
      return 1;
    }
    return 0;
  },
};

function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1048576).toFixed(1)} MiB`;
}
