// A JS test helper for tablestore's production realism (docs/realism.md): starts a tablestore
// process with realism options and installs fault rules through PUT /_tablestore/faults,
// signed with the account key (Shared Key Lite).
//
//   const server = await startRealismServer(["--page-breaks", "random"]);
//   await server.faults.put({ seed: 1, rules: [{ operation: "write", probability: 0.3,
//     action: "error", error: "ServerBusy" }] });
//   const client = TableClient.fromConnectionString(server.connectionString, "t",
//     { allowInsecureConnection: true });
//   ...
//   await server.stop();
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ACCOUNT_KEY, ACCOUNT_NAME } from "./helpers.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const FAULTS_PATH = "/_tablestore/faults";

// The tablestore binary: TABLESTORE_BIN, else target/{release,debug}/tablestore, or undefined.
export function realismBinary() {
  if (process.env.TABLESTORE_BIN) return process.env.TABLESTORE_BIN;
  if (process.env.TABLESTORE_TEST_TARGET === "azurite") return undefined;
  for (const profile of ["release", "debug"]) {
    const candidate = join(ROOT, "target", profile, "tablestore");
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

function faultsClient(endpoint) {
  const call = async (method, body) => {
    const date = new Date().toUTCString();
    const signature = createHmac("sha256", Buffer.from(ACCOUNT_KEY, "base64"))
      .update(`${date}\n/${ACCOUNT_NAME}${FAULTS_PATH}`)
      .digest("base64");
    const response = await fetch(endpoint + FAULTS_PATH, {
      method,
      body,
      headers: { "x-ms-date": date, Authorization: `SharedKeyLite ${ACCOUNT_NAME}:${signature}` },
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${FAULTS_PATH}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    put: (rules) => call("PUT", typeof rules === "string" ? rules : JSON.stringify(rules)),
    get: () => call("GET"),
    clear: () => call("DELETE"),
  };
}

/** Starts tablestore (in memory, free port) with `args`. */
export function startRealismServer(args = []) {
  const binary = realismBinary();
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ["--host", "127.0.0.1", "--port", "0", "--in-memory", ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`tablestore did not start:\n${output}`));
    }, 30000);
    const onExit = (code) => {
      clearTimeout(timer);
      reject(new Error(`tablestore exited (${code}):\n${output}`));
    };
    const onData = (chunk) => {
      output += chunk;
      const match = output.match(/tablestore listening on (\S+)/);
      if (match && output.includes("Table service is successfully listening")) {
        clearTimeout(timer);
        child.off("exit", onExit);
        const endpoint = match[1];
        resolve({
          endpoint,
          connectionString:
            "DefaultEndpointsProtocol=http;" +
            `AccountName=${ACCOUNT_NAME};AccountKey=${ACCOUNT_KEY};` +
            `TableEndpoint=${endpoint}/${ACCOUNT_NAME};`,
          faults: faultsClient(endpoint),
          log: () => output,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once("exit", done);
              child.kill("SIGTERM");
            }),
        });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", onExit);
  });
}
