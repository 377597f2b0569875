#!/usr/bin/env node
// Launcher for `npx gcfaas`: the CLI is TypeScript run directly (as the rest of the repo is),
// through tsx's loader registered in this process.
import { register } from "tsx/esm/api";

process.stdout.on("error", (err) => {
  if (err.code === "EPIPE") process.exit(process.exitCode ?? 0); // `gcfaas list | head`
  throw err;
});

register();
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv.slice(2));
