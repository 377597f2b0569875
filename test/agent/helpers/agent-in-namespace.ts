// An agent's builder in a mount namespace of its own, as systemd's ProtectSystem, PrivateTmp and
// the like give the unit. Run as:
//   unshare --mount --propagation private node --import tsx agent-in-namespace.ts STEP DIR [ENGINE_NS]
// STEP build: builds a two-file Python function in DIR; leave-space: makes a build space in DIR and
// exits without removing it (an agent killed mid-build); remove-leftovers: what a restarted agent
// does with DIR/... Prints its outcome as JSON.
import { buildFunction } from "../../../agent/builder/build-function.js";
import { BuildSpace, removeLeftoverBuildSpaces } from "../../../agent/builder/build-space.js";
import { useEngineMountNamespace } from "../../../agent/builder/host-mount.js";
import { zipSources } from "../../support/zip.js";

const [step, dir, engineNs] = process.argv.slice(2) as [string, string, string | undefined];
await useEngineMountNamespace(engineNs);
if (step === "build") {
  const zip = await zipSources({ "handler.py": "import helper\ndef handle(event, context):\n    return helper.VALUE\n", "helper.py": "VALUE = 1\n" });
  const log: string[] = [];
  const result = await buildFunction({ lang: "py", zip, workDir: dir, onLog: (l) => log.push(l), limits: { diskMiB: 64 } });
  process.stdout.write(JSON.stringify({ result, log }));
} else if (step === "leave-space") {
  process.stdout.write(JSON.stringify({ root: (await BuildSpace.create(dir, 64, 10001)).root }));
} else if (step === "remove-leftovers") {
  process.stdout.write(JSON.stringify({ removed: await removeLeftoverBuildSpaces(dir) }));
} else {
  throw new Error(`unknown step ${step}`);
}
