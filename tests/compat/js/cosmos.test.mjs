// @azure/data-tables against `tablestore --flavor cosmos` (issue 32, docs/cosmos.md). The
// suite starts its own Cosmos-flavoured server (realism.mjs starts the binary under test with
// the options given) and connects with the Cosmos DB emulator's connection string, unchanged
// but for the port. The SDK takes `localhost` for a Cosmos endpoint (isCosmosEndpoint), so
// it sends Merge as POST + X-HTTP-Method: MERGE, at top level and inside $batch; the server
// answers PATCH with 405, so these tests fail if the SDK took the Storage path.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { TableClient, TableServiceClient } from "@azure/data-tables";
import { all, rejectsWith, serverBinary, uniqueTableName } from "./helpers.mjs";
import { startRealismServer } from "./realism.mjs";

const skip = serverBinary() ? false : "TABLESTORE_BIN is not set and no target/*/tablestore was built";
const KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
const OPTIONS = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };
const SEVEN_DIGITS = /datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d\.\d{7}Z'/;

describe("cosmos flavour", { skip }, () => {
  let server;
  let connectionString;
  before(async () => {
    server = await startRealismServer(["--flavor", "cosmos"]);
    const port = /localhost:(\d+)\//.exec(server.connectionString)?.[1];
    connectionString =
      `DefaultEndpointsProtocol=http;AccountName=localhost;AccountKey=${KEY};` +
      `TableEndpoint=http://localhost:${port}/;`;
    assert.equal(server.connectionString, connectionString);
    assert.equal(server.account, "localhost");
  });
  after(async () => server?.stop());

  const table = (name) => TableClient.fromConnectionString(connectionString, name, OPTIONS);

  it("tables and entities through the Cosmos path", async () => {
    const name = uniqueTableName("jscosmos");
    const service = TableServiceClient.fromConnectionString(connectionString, OPTIONS);
    await service.createTable(name);
    const names = (await all(service.listTables())).map((t) => t.name);
    assert.ok(names.includes(name));
    const client = table(name);
    const created = await client.createEntity({ partitionKey: "p", rowKey: "r", n: 1 });
    assert.match(created.etag, SEVEN_DIGITS);
    await client.updateEntity({ partitionKey: "p", rowKey: "r", m: 2 }, "Merge");
    await client.upsertEntity({ partitionKey: "p", rowKey: "u", k: 3 }, "Merge");
    const got = await client.getEntity("p", "r");
    assert.deepEqual([got.n, got.m], [1, 2]);
    assert.match(got.etag, SEVEN_DIGITS);
    assert.match(got.timestamp, /\.\d{7}Z$/);
    await client.deleteEntity("p", "u");
    await rejectsWith(() => client.getEntity("p", "u"), 404, "ResourceNotFound");
    await service.deleteTable(name);
  });

  it("batches, with Merge inside the change set", async () => {
    const client = table(uniqueTableName("jsbatch"));
    await client.createTable();
    await client.createEntity({ partitionKey: "p", rowKey: "m", a: 1 });
    const result = await client.submitTransaction([
      ["create", { partitionKey: "p", rowKey: "c" }],
      ["update", { partitionKey: "p", rowKey: "m", b: 2 }, "Merge"],
    ]);
    assert.equal(result.status, 202);
    assert.equal(result.subResponses.length, 2);
    const merged = await client.getEntity("p", "m");
    assert.deepEqual([merged.a, merged.b], [1, 2]);
  });

  it("queries page in creation order, not key order", async () => {
    const client = table(uniqueTableName("jspaging"));
    await client.createTable();
    const keys = [];
    for (let i = 11; i >= 0; i--) {
      for (const pk of ["b", "a"]) {
        const rk = String(i).padStart(2, "0");
        await client.createEntity({ partitionKey: pk, rowKey: rk });
        keys.push(`${pk}/${rk}`);
      }
    }
    const seen = [];
    let pages = 0;
    for await (const page of client.listEntities().byPage({ maxPageSize: 5 })) {
      pages++;
      for (const e of page) seen.push(`${e.partitionKey}/${e.rowKey}`);
    }
    assert.equal(pages, 5);
    assert.deepEqual(seen, keys, "every entity once, in the order created");
    // A merged entity keeps its place; one deleted and created again moves to the end.
    await client.updateEntity({ partitionKey: "a", rowKey: "05", n: 1 }, "Merge");
    await client.deleteEntity("b", "11");
    await client.createEntity({ partitionKey: "b", rowKey: "11" });
    const again = [];
    for await (const e of client.listEntities()) again.push(`${e.partitionKey}/${e.rowKey}`);
    assert.deepEqual(again, [...keys.filter((k) => k !== "b/11"), "b/11"]);
  });

  it("errors", async () => {
    const name = uniqueTableName("jserrors");
    const client = table(name);
    await client.createTable();
    const service = TableServiceClient.fromConnectionString(connectionString, OPTIONS);
    await rejectsWith(() => client.createEntity({ partitionKey: "", rowKey: "r" }), 400, "PropertiesNeedValue");
    await rejectsWith(() => service.getProperties(), 501, "NotImplemented");
  });

  // A table name in the service URL: Cosmos answers 400 InvalidInput "Request url is
  // invalid." whatever the operation (the .NET SDK suite's recordings against Cosmos).
  it("a table name in the service URL is InvalidInput", async () => {
    const name = uniqueTableName("jsinurl");
    const good = TableServiceClient.fromConnectionString(connectionString, OPTIONS);
    await good.createTable(name);
    const bad = TableServiceClient.fromConnectionString(
      connectionString.replace(/\/;$/, `/${name};`),
      OPTIONS,
    );
    await rejectsWith(() => bad.createTable(name), 400, "InvalidInput");
    await rejectsWith(() => bad.deleteTable(name), 400, "InvalidInput");
    await rejectsWith(() => all(bad.listTables()), 400, "InvalidInput");
    assert.ok((await all(good.listTables())).some((t) => t.name === name));
    await good.deleteTable(name);
  });

  // A change set naming one row twice fails as a whole: 400, not a 202 with a failed part.
  it("a change set naming a row twice is refused whole", async () => {
    const client = table(uniqueTableName("jsdups"));
    await client.createTable();
    const e = await rejectsWith(
      () =>
        client.submitTransaction([
          ["create", { partitionKey: "p", rowKey: "a" }],
          ["create", { partitionKey: "p", rowKey: "b" }],
          ["upsert", { partitionKey: "p", rowKey: "a", x: 1 }],
        ]),
      400,
      "InvalidDuplicateRow",
    );
    assert.match(e.message, /2:The batch request contains multiple changes with same row key\./);
    assert.equal((await all(client.listEntities())).length, 0);
  });

  // Every full page of Query Tables continues, so the last page is empty.
  it("a full table page is followed by an empty one", async () => {
    const prefix = uniqueTableName("jszz");
    const names = [0, 1, 2, 3].map((i) => `${prefix}${i}`);
    const service = TableServiceClient.fromConnectionString(connectionString, OPTIONS);
    for (const n of names) await service.createTable(n);
    const queryOptions = { filter: `TableName ge '${prefix}' and TableName lt '${prefix}~'` };
    const sizes = [];
    for await (const page of service.listTables({ queryOptions }).byPage({ maxPageSize: 2 })) {
      sizes.push(page.length);
    }
    assert.deepEqual(sizes, [2, 2, 0]);
    for (const n of names) await service.deleteTable(n);
  });
});

// Request units (docs/cosmos.md#request-units): under --simulate-targets each table has a
// budget of --cosmos-table-rus RU/s. At 2 RU/s one insert of three properties (5.6 RU) on a
// full bucket leaves it 3.6 RU in debt, so the next insert waits 2.8 s: a wide window on a
// busy machine. Retries are off (and the 429 carries no Retry-After), so the SDK shows it.
describe("cosmos flavour, request units", { skip }, () => {
  let server;
  before(async () => {
    server = await startRealismServer([
      "--flavor",
      "cosmos",
      "--simulate-targets",
      "--cosmos-table-rus",
      "2",
    ]);
  });
  after(async () => server?.stop());

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  it("a table over its request units answers Cosmos's 429 and writes nothing", async () => {
    const client = TableClient.fromConnectionString(
      server.connectionString,
      uniqueTableName("jsrus"),
      OPTIONS,
    );
    await client.createTable();
    await client.createEntity({ partitionKey: "p", rowKey: "a", n: 1 });
    const throttled = await rejectsWith(
      () => client.createEntity({ partitionKey: "p", rowKey: "b", n: 2 }),
      429,
      "TooManyRequests",
    );
    assert.match(throttled.message, /Request rate is large/);
    assert.match(throttled.message, /SubStatusCode: 3200/);
    for (const header of ["retry-after", "retry-after-ms", "x-ms-retry-after-ms"]) {
      assert.equal(throttled.response?.headers.get(header), undefined, header);
    }
    await sleep(3000); // the debt paid, a read (1 RU) fits
    await rejectsWith(() => client.getEntity("p", "b"), 404, "ResourceNotFound");
    await sleep(1200); // a full bucket again, as an insert needs
    await client.createEntity({ partitionKey: "p", rowKey: "b", n: 2 });
    await sleep(2500); // 3.6 RU of debt again; a read needs 1
    assert.equal((await client.getEntity("p", "b")).n, 2);
  });
});
