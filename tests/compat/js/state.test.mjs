// Test state through @azure/data-tables (issue 42, docs/test-isolation.md): the npm helper's
// server.reset(), server.snapshots and server.accounts on a tablestore process of this
// suite's own (the shared suite server is never reset under the other suites).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { TableClient, TableServiceClient } from "@azure/data-tables";
import { start } from "../../../packaging/npm/tablestore/index.mjs";
import { all, CLIENT_OPTIONS, serverBinary } from "./helpers.mjs";

const skip = serverBinary() ? false : "TABLESTORE_BIN is not set and no target/*/tablestore was built";

const names = async (service) => (await all(service.listTables())).map((t) => t.name).sort();

describe("test state: reset, snapshots, accounts on demand", { skip }, () => {
  let server;
  let service;
  before(async () => {
    server = await start({ binary: serverBinary() });
    service = TableServiceClient.fromConnectionString(server.connectionString, CLIENT_OPTIONS);
  });
  after(async () => server?.stop());

  it("server.reset() empties the server", async () => {
    await service.createTable("resetjs");
    const answer = await server.reset();
    assert.equal(answer.scope, "server");
    assert.deepEqual(await names(service), []);
  });

  it("a snapshot saved, changed and restored comes back whole", async () => {
    await server.reset();
    const table = TableClient.fromConnectionString(server.connectionString, "seededjs", CLIENT_OPTIONS);
    await table.createTable();
    await table.createEntity({ partitionKey: "p", rowKey: "kept", n: 1 });
    const saved = await server.snapshots.save("seeded");
    assert.equal(saved.entities, 1);
    await table.createEntity({ partitionKey: "p", rowKey: "added" });
    await table.updateEntity({ partitionKey: "p", rowKey: "kept", n: 2 }, "Replace");
    await server.snapshots.restore("seeded");
    const rows = (await all(table.listEntities())).map((e) => [e.rowKey, e.n]);
    assert.deepEqual(rows, [["kept", 1]]);
    assert.deepEqual((await server.snapshots.list()).map((s) => s.name), ["seeded"]);
    await server.snapshots.delete("seeded");
    await assert.rejects(server.snapshots.restore("seeded"), /404 There is no snapshot named "seeded"/);
    await assert.rejects(server.snapshots.save("a/b"), /400 A snapshot name cannot hold path characters/);
  });

  it("accounts on demand are isolated, and gone once deleted", async () => {
    await server.reset();
    const worker = await server.accounts.create();
    assert.match(worker.name, /^acct[0-9a-f]{12}$/);
    const own = TableServiceClient.fromConnectionString(worker.connectionString, CLIENT_OPTIONS);
    await own.createTable("minejs");
    assert.deepEqual(await names(own), ["minejs"]);
    assert.deepEqual(await names(service), []);
    const listed = (await server.accounts.list()).map((a) => a.name);
    assert.ok(listed.includes(worker.name), listed.join());
    await server.accounts.delete(worker.name);
    await assert.rejects(own.createTable("again"), (e) => e.statusCode === 403);
  });
});
