// Generate Shared Key Lite and SAS fixtures with the official JS SDK (@azure/data-tables).
//
// Run from a throwaway directory where `npm install @azure/data-tables` was done:
//
//     NODE_PATH=/that/dir/node_modules node tests/golden/auth/gen/js_gen.mjs > tests/golden/auth/js.json
//
// (ESM ignores NODE_PATH, so the script loads the SDK with createRequire from SDK_DIR or cwd.)
// No network is used: a capturing HttpClient records each request exactly as the SDK would send
// it (after the SDK's own signing policy) and then aborts the call.

import { createRequire } from "node:module";
import path from "node:path";

const sdkDir = process.env.SDK_DIR ?? process.cwd();
const require = createRequire(path.join(sdkDir, "package.json"));
const {
  TableClient,
  TableServiceClient,
  AzureNamedKeyCredential,
  AzureSASCredential,
  generateTableSas,
  generateAccountSas,
} = require("@azure/data-tables");
const sdkVersion = require("@azure/data-tables/package.json").version;

const ACCOUNT = "devstoreaccount1";
const KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const PATH_STYLE = `http://127.0.0.1:10002/${ACCOUNT}`;
const HOST_STYLE = `https://${ACCOUNT}.table.core.windows.net`;
const START = new Date("2024-01-01T00:00:00Z");
const EXPIRY = new Date("2024-01-02T00:00:00Z");
const INSIDE = "2024-01-01T12:00:00Z";

class Captured extends Error {}

function capturingClient(sink) {
  return {
    async sendRequest(request) {
      const u = new URL(request.url);
      const headers = {};
      for (const [k, v] of request.headers) headers[k] = v;
      sink.push({
        method: request.method,
        // What Node's HTTP client puts on the request line is pathname + search.
        url: `${u.protocol}//${u.host}${u.pathname}${u.search}`,
        signed_url: request.url,
        headers,
        body: typeof request.body === "string" && request.body.includes("SignedIdentifiers") ? request.body : undefined,
      });
      throw new Captured("captured");
    },
  };
}

async function capture(fn) {
  const sink = [];
  const httpClient = capturingClient(sink);
  try {
    await fn(httpClient);
  } catch (e) {
    if (!(e instanceof Captured) && !String(e?.message ?? e).includes("captured")) throw e;
  }
  if (sink.length !== 1) throw new Error(`expected one request, got ${sink.length}`);
  return sink[0];
}

const opts = (httpClient) => ({ httpClient, allowInsecureConnection: true, retryOptions: { maxRetries: 0 } });
const keyCred = () => new AzureNamedKeyCredential(ACCOUNT, KEY);
const table = (endpoint, cred, hc, name = "MyTable") => new TableClient(endpoint, name, cred, opts(hc));
const service = (endpoint, cred, hc) => new TableServiceClient(endpoint, cred, opts(hc));

function nowFrom(req) {
  const d = req.headers["x-ms-date"] ?? req.headers["date"];
  return d ? new Date(d).toISOString().replace(/\.\d{3}Z$/, "Z") : INSIDE;
}

const ENTITY = { partitionKey: "pk'1", rowKey: "r k/2", Value: 1 };

const sharedKeyOps = [
  ["create_table", "CreateTable", null, (e, c, h) => service(e, c, h).createTable("MyTable")],
  ["list_tables_filter", "QueryTables", null,
    (e, c, h) => service(e, c, h).listTables({ queryOptions: { filter: "TableName eq 'MyTable'" } }).next()],
  ["delete_table", "DeleteTable", null, (e, c, h) => service(e, c, h).deleteTable("MyTable")],
  ["get_service_properties", "GetServiceProperties", null, (e, c, h) => service(e, c, h).getProperties()],
  ["get_table_acl", "GetTableAcl", "MyTable", (e, c, h) => table(e, c, h).getAccessPolicy()],
  ["set_table_acl", "SetTableAcl", "MyTable",
    (e, c, h) => table(e, c, h).setAccessPolicy([{ id: "id1", accessPolicy: { permission: "r", start: START, expiry: EXPIRY } }])],
  ["set_table_acl_partial", "SetTableAcl", "MyTable",
    (e, c, h) => table(e, c, h).setAccessPolicy([{ id: "empty" }, { id: "perm-only", accessPolicy: { permission: "r" } }])],
  ["insert_entity", "InsertEntity", "MyTable", (e, c, h) => table(e, c, h).createEntity(ENTITY)],
  ["get_entity_quote_and_space", "GetEntity", "MyTable", (e, c, h) => table(e, c, h).getEntity("pk'1", "r k/2")],
  ["get_entity_select", "GetEntity", "MyTable",
    (e, c, h) => table(e, c, h).getEntity("a", "b", { queryOptions: { select: ["Value"] } })],
  ["query_entities_filter", "QueryEntities", "MyTable",
    (e, c, h) => table(e, c, h).listEntities({ queryOptions: { filter: "PartitionKey eq 'a' and Value gt 3" } }).next()],
  ["upsert_merge", "InsertOrMergeEntity", "MyTable", (e, c, h) => table(e, c, h).upsertEntity(ENTITY, "Merge")],
  ["update_replace", "UpdateEntity", "MyTable", (e, c, h) => table(e, c, h).updateEntity(ENTITY, "Replace")],
  ["delete_entity", "DeleteEntity", "MyTable", (e, c, h) => table(e, c, h).deleteEntity("pk'1", "r k/2")],
  ["batch", "Batch", "MyTable",
    (e, c, h) => table(e, c, h).submitTransaction([["create", ENTITY], ["upsert", { partitionKey: "pk'1", rowKey: "x" }]])],
];

function makeCase(name, req, endpoint, operation, tableName, principal, extra = {}) {
  return {
    name,
    method: req.method,
    url: req.url,
    signed_url: req.signed_url,
    headers: req.headers,
    account: ACCOUNT,
    path_style: endpoint === PATH_STYLE,
    now: principal === "SharedKey" ? nowFrom(req) : INSIDE,
    principal,
    operation,
    table: tableName,
    ...(req.body !== undefined ? { body: req.body } : {}),
    ...extra,
  };
}

const cases = [];
for (const endpoint of [PATH_STYLE, HOST_STYLE]) {
  const style = endpoint === PATH_STYLE ? "path" : "host";
  for (const [name, op, tbl, fn] of sharedKeyOps) {
    const req = await capture((h) => fn(endpoint, keyCred(), h));
    cases.push(makeCase(`js_shared_key_lite_${style}_${name}`, req, endpoint, op, tbl, "SharedKey"));
  }
}

const tableSas = [
  ["raud_range", { permissions: { query: true, add: true, update: true, delete: true }, startsOn: START, expiresOn: EXPIRY,
    startPartitionKey: "pk1", startRowKey: "a", endPartitionKey: "pk9", endRowKey: "z" }],
  ["r_pk_only", { permissions: { query: true }, expiresOn: EXPIRY, startPartitionKey: "pk1", endPartitionKey: "pk5" }],
  ["au_https_ip", { permissions: { add: true, update: true }, startsOn: START, expiresOn: EXPIRY, protocol: "https",
    ipRange: { start: "10.0.0.1", end: "10.0.0.9" } }],
  ["policy_only", { identifier: "policy1" }],
];
const tokens = [];
for (const [name, options] of tableSas) {
  const token = generateTableSas("MyTable", keyCred(), options);
  tokens.push({ name: `js_table_sas_${name}`, kind: "service", token });
  for (const endpoint of [PATH_STYLE, HOST_STYLE]) {
    const style = endpoint === PATH_STYLE ? "path" : "host";
    const sas = new AzureSASCredential(token);
    let req = await capture((h) => table(endpoint, sas, h).getEntity("pk2", "m"));
    cases.push(makeCase(`js_table_sas_${name}_${style}_get_entity`, req, endpoint, "GetEntity", "MyTable", "Sas", { sas_kind: "service" }));
    req = await capture((h) => table(endpoint, sas, h).upsertEntity({ partitionKey: "pk2", rowKey: "m" }, "Merge"));
    cases.push(makeCase(`js_table_sas_${name}_${style}_upsert`, req, endpoint, "InsertOrMergeEntity", "MyTable", "Sas", { sas_kind: "service" }));
  }
}

const accountSas = [
  ["all_sco", { permissions: { query: true, write: true, delete: true, list: true, add: true, update: true },
    resourceTypes: "sco", startsOn: START, expiresOn: EXPIRY }],
  ["o_r", { permissions: { query: true }, resourceTypes: "o", expiresOn: EXPIRY }],
  ["c_l_https", { permissions: { list: true }, resourceTypes: "c", startsOn: START, expiresOn: EXPIRY, protocol: "https",
    ipRange: { start: "192.168.0.10" } }],
];
for (const [name, options] of accountSas) {
  const token = generateAccountSas(keyCred(), options);
  tokens.push({ name: `js_account_sas_${name}`, kind: "account", token });
  for (const endpoint of [PATH_STYLE, HOST_STYLE]) {
    const style = endpoint === PATH_STYLE ? "path" : "host";
    const sas = new AzureSASCredential(token);
    let req = await capture((h) => service(endpoint, sas, h).listTables().next());
    cases.push(makeCase(`js_account_sas_${name}_${style}_list_tables`, req, endpoint, "QueryTables", null, "Sas", { sas_kind: "account" }));
    req = await capture((h) => table(endpoint, sas, h).getEntity("pk2", "m"));
    cases.push(makeCase(`js_account_sas_${name}_${style}_get_entity`, req, endpoint, "GetEntity", "MyTable", "Sas", { sas_kind: "account" }));
  }
}

process.stdout.write(JSON.stringify({
  generator: `@azure/data-tables ${sdkVersion} (Node ${process.version})`,
  account_key: KEY,
  sas_times: { start: "2024-01-01T00:00:00Z", expiry: "2024-01-02T00:00:00Z", inside: INSIDE },
  tokens,
  cases,
}, null, 1) + "\n");
