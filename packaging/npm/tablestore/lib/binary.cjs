// Where the native tablestore binary is: $TABLESTORE_BINARY, else the platform package npm
// installed as an optional dependency (tablestore-server-<platform>-<arch>, the layout esbuild
// and other native CLIs on npm use: npm installs only the one whose "os"/"cpu" match).
"use strict";

const path = require("node:path");

const PLATFORMS = {
  "linux-x64": "tablestore-server-linux-x64",
  "linux-arm64": "tablestore-server-linux-arm64",
  "darwin-x64": "tablestore-server-darwin-x64",
  "darwin-arm64": "tablestore-server-darwin-arm64",
  "win32-x64": "tablestore-server-win32-x64",
};

function binaryPath() {
  if (process.env.TABLESTORE_BINARY) return process.env.TABLESTORE_BINARY;
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    throw new Error(
      `tablestore has no binary for ${key}; supported: ${Object.keys(PLATFORMS).join(", ")}`,
    );
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new Error(
      `${pkg} is not installed (npm skips optional dependencies with --omit=optional or ` +
        `--no-optional): reinstall tablestore-server with optional dependencies`,
    );
  }
  return path.join(dir, "bin", process.platform === "win32" ? "tablestore.exe" : "tablestore");
}

module.exports = { binaryPath, PLATFORMS };
