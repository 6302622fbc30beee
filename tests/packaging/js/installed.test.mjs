// The installed npm package as a user meets it. scripts/ci/packages.sh copies this file into
// a temporary npm project where only the packed tablestore-server tarballs and @azure/data-tables
// are installed, and runs it there with `node --test`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { openSync, readSync, closeSync, realpathSync, readFileSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import * as readline from "node:readline";
import * as path from "node:path";
import { randomUUID } from "node:crypto";
import { TableClient, TableServiceClient } from "@azure/data-tables";
import { start, startRealismServer, globalSetup, freshAccount, binaryPath } from "tablestore-server";

const READY = "Azurite Table service is successfully listening at ";
const SERVER_ARGS = ["--inMemoryPersistence", "--tablePort", "0"];
const BIN = path.resolve("node_modules", ".bin", process.platform === "win32" ? "tablestore.cmd" : "tablestore");

/** A short SDK round trip: table, upsert, point read, query, delete. */
async function scenario(connectionString) {
  const name = `pkg${randomUUID().replaceAll("-", "").slice(0, 10)}`;
  const service = TableServiceClient.fromConnectionString(connectionString, { allowInsecureConnection: true });
  await service.createTable(name);
  const table = TableClient.fromConnectionString(connectionString, name, { allowInsecureConnection: true });
  await table.upsertEntity({ partitionKey: "nl", rowKey: "1", Name: "Ada", Age: 36 });
  await table.upsertEntity({ partitionKey: "nl", rowKey: "2", Name: "Bob", Age: 41 });
  assert.equal((await table.getEntity("nl", "1")).Name, "Ada");
  const found = [];
  for await (const e of table.listEntities({ queryOptions: { filter: "Age gt 40" } })) found.push(e.Name);
  assert.deepEqual(found, ["Bob"]);
  await service.deleteTable(name);
}

test("npx tablestore runs the platform binary", () => {
  const out = execFileSync("npx", ["--offline", "--no-install", "tablestore", "--version"], { encoding: "utf8" });
  assert.match(out, /^tablestore \d+\.\d+\.\d+/);
  // With several bins (azurite, azurite-table), the package's own name still runs the server.
  const byPackage = execFileSync("npx", ["--offline", "--no-install", "tablestore-server", "--version"], { encoding: "utf8" });
  assert.match(byPackage, /^tablestore \d+\.\d+\.\d+/);
  assert.ok(binaryPath().includes(path.join("node_modules", "tablestore-server-")), binaryPath());
});

test("the installed command is the native binary, not a node launcher", { skip: process.platform === "win32" }, () => {
  // The postinstall step replaced bin/tablestore with the platform binary.
  const fd = openSync(realpathSync(BIN), "r");
  const head = Buffer.alloc(4);
  readSync(fd, head, 0, 4, 0);
  closeSync(fd);
  assert.ok(!head.toString("latin1").startsWith("#!"), "still the node launcher");
});

/** Starts `command` in a process group of its own; resolves with it and its exit once the
 * server it runs prints its readiness line. */
async function startGroup(command, args, env = process.env) {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"], detached: true, env });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  let endpoint = "";
  for await (const line of readline.createInterface({ input: child.stdout })) {
    if (line.startsWith(READY)) {
      endpoint = line.slice(READY.length);
      break;
    }
  }
  child.stdout.resume(); // keep draining the server's log
  assert.ok(endpoint, "no readiness line");
  return { child, exited, endpoint };
}

/** Whether a server still listens at `endpoint` 5 s from now (false as soon as a TCP connection
 * is refused). A plain connect, not fetch: an HTTP request caught in the server's graceful
 * shutdown may wait on a socket that keeps nothing in this process alive. */
async function stillAnswers(endpoint) {
  const { hostname, port } = new URL(endpoint);
  const listening = () =>
    new Promise((resolve) => {
      const socket = net.connect({ host: hostname, port: Number(port) });
      const timer = setTimeout(() => {
        socket.destroy();
        resolve(true); // connected or pending: the port is not refused yet
      }, 1000);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
  for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
    if (!(await listening())) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** Kills what is left of a process group (nothing, when the test passed). */
function killGroup(child) {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // the group is gone: nothing was left behind
  }
}

test("the node launcher (kept for --ignore-scripts and Windows) passes SIGTERM and SIGINT on", async () => {
  const launcher = path.resolve("node_modules", "tablestore-server", "lib", "launcher.cjs");
  assert.match(execFileSync("node", [launcher, "--version"], { encoding: "utf8" }), /^tablestore /);
  for (const signal of ["SIGTERM", "SIGINT"]) {
    const { child, exited } = await startGroup("node", [launcher, ...SERVER_ARGS]);
    try {
      child.kill(signal);
      const { code, signal: by } = await exited;
      assert.equal(code, 0, `the launcher exits with the server's status after ${signal} (it ended by ${by})`);
    } finally {
      killGroup(child);
    }
  }
});

test("under npx the node launcher stops the server when npm's shell dies", { skip: process.platform === "win32" }, async () => {
  // As npm runs it: `sh -c '<bin> …'` marked npm_lifecycle_event=npx; npm's SIGTERM reaches
  // the shell alone.
  const launcher = path.resolve("node_modules", "tablestore-server", "lib", "launcher.cjs");
  const { child, exited, endpoint } = await startGroup(
    "sh",
    ["-c", `node '${launcher}' ${SERVER_ARGS.join(" ")}`],
    { ...process.env, npm_lifecycle_event: "npx" },
  );
  try {
    child.kill("SIGTERM");
    await exited;
    assert.equal(await stillAnswers(endpoint), false, "the server outlived npm's shell");
  } finally {
    killGroup(child);
  }
});

test("stopping npx stops the server it started", { skip: process.platform === "win32" }, async () => {
  // npm runs the command as `sh -c 'tablestore …'` and passes SIGTERM and SIGINT to that shell
  // alone. A process manager or test runner stops `npx tablestore` with SIGTERM to npx's own
  // process; a terminal's Ctrl-C sends SIGINT to the whole process group.
  for (const [signal, toGroup] of [["SIGTERM", false], ["SIGINT", true]]) {
    const { child, exited, endpoint } = await startGroup("npx", ["--offline", "--no-install", "tablestore", ...SERVER_ARGS]);
    try {
      assert.equal((await fetch(`${endpoint}/_health`)).status, 200);
      process.kill(toGroup ? -child.pid : child.pid, signal);
      await exited;
      assert.equal(await stillAnswers(endpoint), false, `the server outlived ${signal} to npx`);
    } finally {
      killGroup(child);
    }
  }
});

test("the installed command serves an SDK scenario and stops on SIGTERM", async () => {
  const child = spawn(BIN, ["--inMemoryPersistence", "--tableHost", "127.0.0.1", "--tablePort", "0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  let connectionString = "";
  for await (const line of readline.createInterface({ input: child.stdout })) {
    if (line.startsWith("Connection string: ")) connectionString = line.slice("Connection string: ".length);
    if (line.startsWith(READY)) break;
  }
  child.stdout.resume(); // keep draining the access log
  assert.ok(connectionString, "no connection string printed");
  try {
    await scenario(connectionString);
  } finally {
    child.kill("SIGTERM");
  }
  assert.equal(await exited, 0);
});

/** `node_modules/.bin/<name>`, the command npm puts on PATH for npm scripts and npx. */
const bin = (name) => path.resolve("node_modules", ".bin", process.platform === "win32" ? `${name}.cmd` : name);

/** Starts `command` with `args` and resolves with its process, exit, connection string and
 * readiness line, once it prints one that starts with `ready`. */
async function startCommand(command, args, ready) {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  let connectionString = "";
  let readiness = "";
  for await (const line of readline.createInterface({ input: child.stdout })) {
    if (line.startsWith("Connection string: ")) connectionString = line.slice("Connection string: ".length);
    if (line.startsWith(ready)) {
      readiness = line;
      break;
    }
  }
  child.stdout.resume(); // keep draining the access log
  return { child, exited, connectionString, readiness };
}

test("azurite-table and azurite, typed as for Azurite, run tablestore as those commands", async () => {
  // Each prints its Azurite command's readiness line, as the container image does.
  for (const [name, args, ready] of [
    ["azurite-table", ["--tableHost", "127.0.0.1", "--tablePort", "0", "--inMemoryPersistence"],
      "Azurite Table service successfully started on 127.0.0.1:"],
    ["azurite", ["--blobHost", "127.0.0.1", "--tableHost", "127.0.0.1", "--tablePort", "0", "--inMemoryPersistence"],
      "Azurite Table service is successfully listening at http://127.0.0.1:"],
  ]) {
    const { child, exited, connectionString, readiness } = await startCommand(bin(name), args, ready);
    try {
      assert.ok(readiness, `${name}: no readiness line`);
      await scenario(connectionString);
    } finally {
      child.kill("SIGTERM");
    }
    assert.equal(await exited, 0, name);
    if (process.platform !== "win32") {
      // Replaced by the binary at install time, as bin/tablestore is.
      const fd = openSync(realpathSync(bin(name)), "r");
      const head = Buffer.alloc(2);
      readSync(fd, head, 0, 2, 0);
      closeSync(fd);
      assert.notEqual(head.toString("latin1"), "#!", `${name} is still the node launcher`);
    }
  }
  // The node launcher (npm --ignore-scripts, Windows) does the same under either name.
  const launcherBin = path.resolve("node_modules", "tablestore-server", "lib", "launcher.cjs");
  const copy = path.resolve("azurite-table.cjs"); // CommonJS whatever the project says
  writeFileSync(copy, `require(${JSON.stringify(launcherBin)});\n`);
  const { child, exited, readiness } = await startCommand(
    "node",
    [copy, "--tableHost", "127.0.0.1", "--tablePort", "0", "--inMemoryPersistence"],
    "Azurite Table service successfully started on 127.0.0.1:",
  );
  child.kill("SIGTERM");
  assert.ok(readiness, "the launcher run as azurite-table printed no azurite-table readiness line");
  assert.equal(await exited, 0);
});

test("start() serves the Cosmos flavour with its readiness line", async () => {
  const server = await start({ args: ["--flavor", "cosmos"] });
  try {
    assert.equal(server.account, "localhost");
    assert.match(server.connectionString, /TableEndpoint=http:\/\/localhost:\d+\/;/);
    assert.ok(server.output.some((l) => l.startsWith("Cosmos DB Table service is successfully listening at ")));
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test("start() gives a ready server and its connection string", async () => {
  const server = await start();
  try {
    assert.match(server.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(server.account, "devstoreaccount1");
    await scenario(server.connectionString);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test("globalSetup exports the connection string and returns the teardown", async () => {
  delete process.env.TABLESTORE_CONNECTION_STRING;
  const teardown = await globalSetup();
  try {
    assert.ok(process.env.TABLESTORE_CONNECTION_STRING);
    await scenario(process.env.TABLESTORE_CONNECTION_STRING);
  } finally {
    await teardown();
  }
});

test("a fresh account is served alone", async () => {
  const account = freshAccount();
  const server = await start({ account });
  try {
    assert.equal(server.account, account.name);
    await scenario(server.connectionString);
  } finally {
    await server.stop();
  }
});

test("a server that cannot start rejects with its one-sentence reason", async () => {
  await assert.rejects(start({ location: BIN, timeoutMs: 10000 }), /is a file, not a folder/);
});

test("startRealismServer passes its options and server.faults installs rules", async () => {
  const server = await startRealismServer(["--simulate-lifecycle", "--table-purge-seconds", "2"]);
  try {
    assert.ok(server.process.spawnargs.includes("--simulate-lifecycle"), server.process.spawnargs.join(" "));
    const service = TableServiceClient.fromConnectionString(server.connectionString, { allowInsecureConnection: true });
    await service.createTable("orders");
    // TOML text, as in a --faults file: the first read of the table is refused once.
    const report = await server.faults.put(
      'seed = 3\n[[rules]]\ntable = "orders"\noperation = "read"\nnth = 1\naction = "error"\nerror = "ServerBusy"\n',
    );
    assert.equal(report.seed, 3);
    const table = TableClient.fromConnectionString(server.connectionString, "orders", { allowInsecureConnection: true });
    for await (const _ of table.listEntities()) assert.fail("the table is empty");
    const [rule] = (await server.faults.get()).rules;
    assert.equal(rule.fired, 1, JSON.stringify(rule)); // refused once, retried by the SDK
    await server.faults.clear();
    assert.deepEqual((await server.faults.get()).rules, []);
    await assert.rejects(server.faults.put({ rules: [{ action: "error", error: "Busy" }] }), /400 .*unknown error code/);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test("the installed helper resets, snapshots and makes accounts (docs/test-isolation.md)", async () => {
  const server = await start();
  try {
    const service = TableServiceClient.fromConnectionString(server.connectionString, { allowInsecureConnection: true });
    await service.createTable("base");
    await server.snapshots.save("base");
    await service.createTable("during");
    await server.snapshots.restore("base");
    const names = async (s) => {
      const out = [];
      for await (const t of s.listTables()) out.push(t.name);
      return out.sort();
    };
    assert.deepEqual(await names(service), ["base"]);
    await server.reset();
    assert.deepEqual(await names(service), []);
    const worker = await server.accounts.create("pkgworker");
    const own = TableServiceClient.fromConnectionString(worker.connectionString, { allowInsecureConnection: true });
    await own.createTable("mine");
    assert.deepEqual(await names(own), ["mine"]);
    await server.accounts.delete("pkgworker");
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

// docs/realism.md's JS examples, each a whole ES module, run as written in this project (where
// only the packed packages and the SDK are installed). scripts/ci/packages.sh names the guide.
const GUIDE = process.env.TABLESTORE_REALISM_GUIDE;
const EXAMPLES = GUIDE ? [...readFileSync(GUIDE, "utf8").matchAll(/^```js\n([\s\S]*?)^```/gm)].map((m) => m[1]) : [];

test("the realism guide has its JS examples", () => {
  assert.ok(GUIDE, "TABLESTORE_REALISM_GUIDE is not set (scripts/ci/packages.sh sets it to docs/realism.md)");
  assert.equal(EXAMPLES.length, 4, `${EXAMPLES.length} js examples in ${GUIDE}`);
  for (const e of EXAMPLES) assert.match(e, /from "tablestore-server"/);
});

EXAMPLES.forEach((code, n) => {
  test(`the realism guide's JS example ${n + 1} runs as written`, async () => {
    const file = path.resolve(`realism-guide-example-${n + 1}.mjs`);
    writeFileSync(file, code);
    // In its own process group: a failed example cannot leave its server running.
    const child = spawn("node", [file], { stdio: ["ignore", "pipe", "pipe"], detached: true });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => process.kill(-child.pid, "SIGKILL"), 120000);
    const code_ = await new Promise((resolve) => child.once("exit", (c, signal) => resolve(c ?? signal)));
    clearTimeout(timer);
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // the group is gone: nothing left behind
    }
    assert.equal(code_, 0, `example ${n + 1}:\n${code}\n${output}`);
  });
});
