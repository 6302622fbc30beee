// `npx tablestore …` / node_modules/.bin/tablestore: runs the native binary with the same
// arguments and standard streams, passes termination signals on, and exits with its status.
"use strict";

const { spawn } = require("node:child_process");
const { binaryPath } = require("./binary.cjs");

let binary;
try {
  binary = binaryPath();
} catch (e) {
  console.error(`tablestore: ${e.message}`);
  process.exit(1);
}
const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
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
