// An agent's builder in a mount namespace of its own, as systemd's ProtectSystem, PrivateTmp and
// the like give the unit. Run as:
//   unshare --mount --propagation private node --import tsx build-in-namespace.ts WORKDIR [ENGINE_NS]
// Builds a two-file Python function in WORKDIR and prints the result and log as JSON.
import { buildFunction } from "../../../agent/builder/build-function.js";
import { useEngineMountNamespace } from "../../../agent/builder/host-mount.js";
import { zipSources } from "../../support/zip.js";

const [workDir, engineNs] = process.argv.slice(2);
await useEngineMountNamespace(engineNs);
const zip = await zipSources({ "handler.py": "import helper\ndef handle(event, context):\n    return helper.VALUE\n", "helper.py": "VALUE = 1\n" });
const log: string[] = [];
const result = await buildFunction({ lang: "py", zip, workDir: workDir!, onLog: (l) => log.push(l), limits: { diskMiB: 64 } });
process.stdout.write(JSON.stringify({ result, log }));
