// Drives @azure/data-tables `submitTransaction` against the capture server.
// Usage: node js_driver.mjs <port>.  Every case is recorded as `js_<case>`.
import { TableClient } from "@azure/data-tables";

const port = Number(process.argv[2]);
const base = `http://127.0.0.1:${port}`;
const conn =
  "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" +
  "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
  `TableEndpoint=${base}/devstoreaccount1;`;
const etag = "W/\"datetime'2024-01-01T00%3A00%3A00.0000000Z'\"";
const client = TableClient.fromConnectionString(conn, "batchtable", { allowInsecureConnection: true });

async function kase(name, actions) {
  await fetch(`${base}/__name?case=js_${name}`);
  await client.submitTransaction(actions);
}
const e = (rowKey, props = {}) => ({ partitionKey: "pk1", rowKey, ...props });

const typed = e("typed", {
  Name: "Ada",
  Age: 36,
  Big: { value: "1099511627776", type: "Int64" },
  Ratio: 1.5,
  Active: true,
  When: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)),
  Id: { value: "11111111-2222-3333-4444-555555555555", type: "Guid" },
  Blob: new Uint8Array([0, 1, 254]),
});

await kase("create", [["create", e("r1", { Value: 1 })], ["create", typed]]);
await kase("update_replace", [["update", e("r1", { Value: 2 }), "Replace"]]);
await kase("update_merge", [["update", e("r1", { Value: 3 }), "Merge"]]);
await kase("update_etag", [
  ["update", e("r1", { Value: 4 }), "Replace", { etag }],
  ["update", e("r2", { Value: 5 }), "Merge", { etag }],
]);
await kase("upsert_replace", [["upsert", e("r1", { Value: 6 }), "Replace"]]);
await kase("upsert_merge", [["upsert", e("r1", { Value: 7 }), "Merge"]]);
await kase("delete", [["delete", e("r1")]]);
// The JS SDK (13.3.2) drops the options of a "delete" action in submitTransaction, so this
// fixture records If-Match: * even though an etag is passed; kept to document that.
await kase("delete_etag", [["delete", e("r1"), { etag }]]);
await kase("mixed", [
  ["create", e("a'b c/\u00fc", { Value: 1 })],
  ["update", e("r2", { Value: 2 }), "Merge"],
  ["upsert", e("r3", { Value: 3 }), "Replace"],
  ["upsert", e("r4", { Value: 4 }), "Merge"],
  ["delete", e("a'b c/\u00fcd")],
]);
console.log("js: done");
