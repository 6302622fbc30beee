// postinstall: replaces the node launchers in bin/ with the platform binary itself (a
// hard link, else a copy), as esbuild's install script does, so `node_modules/.bin/tablestore`
// and `npx tablestore` start no node process in front of the server. Anything going wrong
// keeps the launcher, which works the same, only slower to start. Not on Windows, where npm's
// .cmd shim runs the bin file with node.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { execFileSync } = require("node:child_process");
const { binaryPath } = require("./binary.cjs");

// Each bin the package declares: `azurite` and `azurite-table` become the binary too, which
// takes the name it runs under for Azurite's command (as the container image's links do).
const BINS = ["tablestore", "azurite", "azurite-table"];

function optimize(name) {
  if (process.platform === "win32" || process.env.TABLESTORE_BINARY) return;
  const native = binaryPath();
  const launcher = path.join(__dirname, "..", "bin", name);
  const staged = `${launcher}.native`;
  fs.rmSync(staged, { force: true });
  try {
    fs.linkSync(native, staged);
  } catch {
    fs.copyFileSync(native, staged);
  }
  fs.chmodSync(staged, 0o755);
  execFileSync(staged, ["--version"], { stdio: "ignore" }); // it must run here
  fs.renameSync(staged, launcher);
}

for (const name of BINS) {
  try {
    optimize(name);
  } catch {
    // The node launcher stays in place.
  }
}
