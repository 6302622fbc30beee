// `npx tablestore …` / node_modules/.bin/tablestore (and the `azurite`, `azurite-table` bins):
// runs the native binary with the same arguments and standard streams, passes termination
// signals on, and exits with its status. Run as `azurite` or `azurite-table`, it puts that word
// first (`tablestore azurite-table …`), which the binary takes for Azurite's command.
"use strict";

const path = require("node:path");
const { spawn } = require("node:child_process");
const { binaryPath } = require("./binary.cjs");

const AZURITE_COMMANDS = ["azurite", "azurite-table"];
const invokedAs = path.basename(process.argv[1] || "").replace(/\.(cmd|js|cjs)$/i, "");
const args = process.argv.slice(2);
if (AZURITE_COMMANDS.includes(invokedAs)) args.unshift(invokedAs);

let binary;
try {
  binary = binaryPath();
} catch (e) {
  console.error(`tablestore: ${e.message}`);
  process.exit(1);
}
const child = spawn(binary, args, { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
// Under `npx` npm runs this as `sh -c 'tablestore …'` and passes SIGTERM to that shell alone,
// which dies without passing it on: when the shell is gone, stop the server as SIGTERM would.
if (process.env.npm_lifecycle_event === "npx" && process.platform !== "win32") {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) child.kill("SIGTERM");
  }, 200).unref();
}
child.on("error", (e) => {
  console.error(`tablestore: cannot run ${binary}: ${e.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  process.exit(code ?? (signal === "SIGINT" || signal === "SIGTERM" ? 0 : 1));
});
