// Shared setup for the @azure/data-tables compatibility suite.
//
// The suite talks to a running server: TABLESTORE_CONNECTION_STRING (full
// connection string) or TABLESTORE_ENDPOINT (http://127.0.0.1:<port>; the dev
// account devstoreaccount1 is used, path style). ./test.sh sets these.
// TABLESTORE_SKIP="batch,query" skips the groups that need those features.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { TableClient, TableServiceClient } from "@azure/data-tables";

export const ACCOUNT_NAME = "devstoreaccount1";
export const ACCOUNT_KEY =
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

export function endpoint() {
  return (process.env.TABLESTORE_ENDPOINT || "http://127.0.0.1:10002").replace(/\/+$/, "");
}

export function connectionString() {
  if (process.env.TABLESTORE_CONNECTION_STRING) return process.env.TABLESTORE_CONNECTION_STRING;
  return (
    "DefaultEndpointsProtocol=http;" +
    `AccountName=${ACCOUNT_NAME};` +
    `AccountKey=${ACCOUNT_KEY};` +
    `TableEndpoint=${endpoint()}/${ACCOUNT_NAME};`
  );
}

// No retries: a failing request fails the test at once.
export const CLIENT_OPTIONS = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };

export function serviceClient() {
  return TableServiceClient.fromConnectionString(connectionString(), CLIENT_OPTIONS);
}

export function tableClient(name) {
  return TableClient.fromConnectionString(connectionString(), name, CLIENT_OPTIONS);
}

/** A valid, unique table name: letter first, alphanumeric, <= 63 chars. */
export function uniqueTableName(hint = "js") {
  const cleaned = hint.replace(/[^A-Za-z0-9]/g, "").slice(0, 30) || "js";
  const prefix = /^[A-Za-z]/.test(cleaned) ? cleaned : `t${cleaned}`;
  return `${prefix}${randomUUID().replace(/-/g, "").slice(0, 16)}`;
}

/** Creates a table and returns [client, cleanup]. */
export async function createTempTable(hint) {
  const name = uniqueTableName(hint);
  const client = tableClient(name);
  await client.createTable();
  return [client, async () => {
    try {
      await client.deleteTable();
    } catch {
      // cleanup only
    }
  }];
}

const skipped = new Set(
  (process.env.TABLESTORE_SKIP || "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean),
);

/** Options for describe(): skip the group when TABLESTORE_SKIP names it. */
export function group(name) {
  return skipped.has(name) ? { skip: `TABLESTORE_SKIP contains ${name}` } : {};
}

/** Collects every item of an async iterable. */
export async function all(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/**
 * The service error code behind a RestError. Azure puts it in the OData error
 * body (it sends no x-ms-error-code header on OData errors), so read the body
 * first and fall back to the header the SDK copies into details.
 */
export function errorCode(e) {
  if (e.code && e.code !== "REQUEST_SEND_ERROR") return e.code;
  const parsed = e.response?.parsedBody?.odataError?.code;
  if (parsed) return parsed;
  try {
    const body = JSON.parse(e.response?.bodyAsText ?? "");
    if (body?.["odata.error"]?.code) return body["odata.error"].code;
  } catch {
    // not JSON
  }
  return e.details?.errorCode ?? e.response?.headers?.get?.("x-ms-error-code");
}

/** Asserts that fn rejects with a RestError of the given status (and code). */
export async function rejectsWith(fn, statusCode, code) {
  let caught;
  try {
    await fn();
  } catch (e) {
    caught = e;
  }
  if (!caught) throw new Error(`expected a ${statusCode} ${code ?? ""} error, but the call succeeded`);
  if (caught.name !== "RestError") throw caught;
  const actual = errorCode(caught);
  if (caught.statusCode !== statusCode || (code !== undefined && actual !== code)) {
    const err = new Error(
      `expected ${statusCode} ${code ?? ""}, got ${caught.statusCode} ${actual}: ${caught.message}`,
    );
    err.cause = caught;
    throw err;
  }
  return caught;
}

/** Ordinal UTF-16 code unit comparison (the service's key order). */
export function compareOrdinal(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a.charCodeAt(i) - b.charCodeAt(i);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

// --- Child servers: tests that need start-up options the shared server lacks --------------

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The tablestore binary: TABLESTORE_BIN, else target/{release,debug}/tablestore, or undefined. */
export function serverBinary() {
  if (process.env.TABLESTORE_BIN) return process.env.TABLESTORE_BIN;
  if (process.env.TABLESTORE_TEST_TARGET === "azurite") return undefined;
  for (const profile of ["release", "debug"]) {
    const candidate = join(ROOT, "target", profile, "tablestore");
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Starts tablestore in memory (with `{ inMemory: false }`, on the data folder `args` name) on a
 * free loopback port (port 0: it prints the one it got) with `args`; resolves to
 * { endpoint, log(), stop() } once Azurite's ready line is printed.
 * stop() sends SIGTERM and resolves when the process has exited.
 */
export function startChildServer(args = [], { inMemory = true } = {}) {
  const binary = serverBinary();
  const storage = inMemory ? ["--in-memory"] : [];
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ["--host", "127.0.0.1", "--port", "0", ...storage, ...args], {
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
        resolve({
          endpoint: match[1],
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
