// Start a tablestore server from JavaScript tests:
//
//   import { start } from "tablestore-server";
//   const server = await start();          // in memory, free loopback port
//   TableClient.fromConnectionString(server.connectionString, "people");
//   await server.stop();
//
// or as a test runner's global setup (vitest `globalSetup`: the returned function is the
// teardown); the connection string is put in process.env.TABLESTORE_CONNECTION_STRING:
//
//   export { globalSetup as default } from "tablestore-server";
//
// Test state (docs/test-isolation.md): `await server.reset()` back to the start-up state;
// `await server.snapshots.save("seeded")` / `.restore("seeded")`; an account per worker with
// `await server.accounts.create()` (its `connectionString`), `server.accounts.delete(name)`.
//
// or with production realism (docs/realism.md), installing fault rules while a test runs:
//
//   const server = await startRealismServer(["--page-breaks", "random"]);
//   await server.faults.put({ seed: 1, rules: [{ operation: "write", probability: 0.3,
//     action: "error", error: "ServerBusy" }] });
//   await server.stop();
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createHmac, randomBytes } from "node:crypto";
import * as readline from "node:readline";

const require = createRequire(import.meta.url);
const { binaryPath } = require("./lib/binary.cjs");

// The readiness line's words in both flavours ("Azurite …" / "Cosmos DB Table service is successfully
// listening at URL").
const READY = "Table service is successfully listening at ";
const FAULTS_PATH = "/_tablestore/faults";

/** The native binary this package installed. */
export { binaryPath };

/** A new account: a name Azure accepts (lower-case letters and digits) and a random key. */
export function freshAccount() {
  return { name: `acct${randomBytes(6).toString("hex")}`, key: randomBytes(32).toString("base64") };
}

/**
 * A control call to `path` (below the server's root) signed with the account key, as the
 * `/_tablestore/` endpoints require (Shared Key Lite over `/{account}{path}`). Resolves to
 * the answer's JSON (undefined for none); a refusal rejects with the status and the server's
 * sentence.
 */
async function signedCall(endpoint, account, accountKey, method, path, query = "", body) {
  const date = new Date().toUTCString();
  const signature = createHmac("sha256", Buffer.from(accountKey, "base64"))
    .update(`${date}\n/${account}${path}`)
    .digest("base64");
  const response = await fetch(endpoint + path + (query ? `?${query}` : ""), {
    method,
    body,
    headers: { "x-ms-date": date, Authorization: `SharedKeyLite ${account}:${signature}` },
  });
  const text = await response.text();
  if (!response.ok) {
    let detail = text.trim();
    try {
      detail = JSON.parse(text)["odata.error"].message.value.split("\n")[0];
    } catch {
      // not Azure's JSON error: the text as it is
    }
    throw new Error(`${method} ${path}: ${response.status} ${detail}`);
  }
  return text ? JSON.parse(text) : undefined;
}

/**
 * Test state of one server (docs/test-isolation.md): `reset()`, snapshots and accounts on
 * demand, signed with the server's account key.
 */
function stateClient(endpoint, account, accountKey) {
  const call = (method, path, query) => signedCall(endpoint, account, accountKey, method, path, query);
  const scope = (options) => (options?.account ? `account=${encodeURIComponent(options.account)}` : "");
  const snapshot = (name) => `/_tablestore/snapshots/${encodeURIComponent(name)}`;
  return {
    /** Back to the state the server started with (the whole server, or `{ account }`). */
    reset: (options) => call("POST", "/_tablestore/reset", scope(options)),
    snapshots: {
      save: (name, options) => call("PUT", snapshot(name), scope(options)),
      restore: (name, options) => call("POST", `${snapshot(name)}/restore`, scope(options)),
      delete: (name) => call("DELETE", snapshot(name)).then(() => undefined),
      list: () => call("GET", "/_tablestore/snapshots").then((r) => r.snapshots),
    },
    accounts: {
      /** A new account with a random key: `{ name, key, connectionString, tableEndpoint }`. */
      create: (name) => call("POST", "/_tablestore/accounts", name ? `name=${encodeURIComponent(name)}` : ""),
      delete: (name) => call("DELETE", `/_tablestore/accounts/${encodeURIComponent(name)}`).then(() => undefined),
      list: () => call("GET", "/_tablestore/accounts").then((r) => r.accounts),
    },
  };
}

/**
 * The fault-injection rules of one server (`/_tablestore/faults`, docs/realism.md), signed
 * with the account key as the endpoint requires (Shared Key Lite over
 * `/{account}/_tablestore/faults`). `put` takes an object (sent as JSON) or TOML/JSON text
 * and resolves to the report; a bad rule rejects with the server's sentence.
 */
function faultsClient(endpoint, account, accountKey) {
  const call = (method, body) => signedCall(endpoint, account, accountKey, method, FAULTS_PATH, "", body);
  return {
    put: (rules) => call("PUT", typeof rules === "string" ? rules : JSON.stringify(rules)),
    get: () => call("GET"),
    clear: () => call("DELETE").then(() => undefined),
  };
}

/**
 * Starts a server and resolves once it is ready.
 * @param {object} [options]
 * @param {boolean} [options.inMemory=true] keep nothing after exit
 * @param {string} [options.location] store in this folder instead
 * @param {{name: string, key: string}} [options.account] serve only this account
 * @param {string[]} [options.args] more arguments for the binary
 * @param {string} [options.binary] the binary to run
 * @param {number} [options.timeoutMs=20000]
 */
export function start(options = {}) {
  const argv = ["--tableHost", options.host ?? "127.0.0.1", "--tablePort", String(options.port ?? 0)];
  if (options.location) argv.push("--location", options.location);
  else if (options.inMemory !== false) argv.push("--inMemoryPersistence");
  if (options.account) argv.push("--accounts", `${options.account.name}:${options.account.key}`);
  argv.push(...(options.args ?? []));
  const binary = options.binary ?? binaryPath();
  const child = spawn(binary, argv, { stdio: ["ignore", "pipe", "pipe"] });
  const output = [];
  const info = { endpoint: "", tableEndpoint: "", connectionString: "", account: "", accountKey: "" };
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));

  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tablestore did not become ready within ${options.timeoutMs ?? 20000} ms:\n${output.join("\n")}`));
    }, options.timeoutMs ?? 20000);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${binary}: ${e.message}`));
    });
    exited.then((status) => {
      clearTimeout(timer);
      reject(new Error(`tablestore exited (${status}) before it was ready:\n${output.join("\n")}`));
    });
    // Both streams keep being read after start-up: a full pipe would block the server.
    readline.createInterface({ input: child.stderr }).on("line", (line) => output.push(line));
    readline.createInterface({ input: child.stdout }).on("line", (line) => {
      if (output.length > 200) output.shift();
      output.push(line);
      if (line.startsWith("Table endpoint: ")) {
        info.tableEndpoint = line.slice("Table endpoint: ".length);
        info.account = info.tableEndpoint.slice(info.tableEndpoint.lastIndexOf("/") + 1);
        info.endpoint = info.tableEndpoint.slice(0, info.tableEndpoint.lastIndexOf("/"));
      } else if (line.startsWith("Connection string: ")) {
        info.connectionString = line.slice("Connection string: ".length);
        info.accountKey = /AccountKey=([^;]*)/.exec(info.connectionString)?.[1] ?? "";
        // `--flavor cosmos` prints a Table endpoint at the root: the account is the string's.
        if (!info.account) info.account = /AccountName=([^;]*)/.exec(info.connectionString)?.[1] ?? "";
      } else if (line.includes(READY)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });

  return ready.then(() => ({
    ...info,
    process: child,
    output,
    ...stateClient(info.endpoint, info.account, info.accountKey),
    /** Fault rules of this server: `put(rules)`, `get()`, `clear()` (docs/realism.md). */
    faults: faultsClient(info.endpoint, info.account, info.accountKey),
    /** Stops the server (SIGTERM: it finishes requests and flushes); resolves to its exit status. */
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  }));
}

/**
 * Starts a server with production realism options (docs/realism.md), such as
 * `["--simulate-targets"]` or `["--page-breaks", "random"]`: `start()` with those arguments
 * (after any in `options.args`), in memory unless `options` says otherwise. The server's
 * `faults` installs fault rules while it runs.
 * @param {string[]} [args]
 * @param {object} [options] as for start()
 */
export function startRealismServer(args = [], options = {}) {
  return start({ ...options, args: [...(options.args ?? []), ...args] });
}

/**
 * Global setup for a test run: starts one server, exports its connection string as
 * TABLESTORE_CONNECTION_STRING (and TABLESTORE_ENDPOINT), and returns the teardown.
 */
export async function globalSetup(options = {}) {
  const server = await start(options);
  process.env.TABLESTORE_CONNECTION_STRING = server.connectionString;
  process.env.TABLESTORE_ENDPOINT = server.endpoint;
  return async () => {
    await server.stop();
  };
}
