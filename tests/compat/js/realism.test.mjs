// Production realism through @azure/data-tables (issue 15): the SDK's default retry policy
// under 30 % injected failures, an insert whose answer is lost after commit, batches under
// injected failures, and SDK page iterators under random page breaks. Each suite starts its
// own tablestore process (realism.mjs).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { TableClient } from "@azure/data-tables";
import { all, CLIENT_OPTIONS, errorCode, rejectsWith, serverBinary, uniqueTableName } from "./helpers.mjs";
import { startRealismServer } from "./realism.mjs";

const skip = serverBinary() ? false : "TABLESTORE_BIN is not set and no target/*/tablestore was built";
// Default retry policy (exponential, 3 retries); only plain HTTP is allowed explicitly.
const DEFAULT_RETRIES = { allowInsecureConnection: true };

describe("realism: fault injection", { skip }, () => {
  let server;
  before(async () => {
    server = await startRealismServer();
  });
  after(async () => server?.stop());

  it("default retries carry every operation through 30 % injected 503/500", async () => {
    const name = uniqueTableName("jsretry");
    const table = TableClient.fromConnectionString(server.connectionString, name, DEFAULT_RETRIES);
    await table.createTable();
    await server.faults.put({
      seed: 15,
      rules: [
        { table: name, operation: "write", probability: 0.3, action: "error", error: "ServerBusy" },
        { table: name, operation: "read", probability: 0.3, action: "error", error: "InternalError" },
      ],
    });
    const expected = new Map();
    for (let i = 0; i < 10; i++) {
      const e = { partitionKey: "p", rowKey: String(i).padStart(2, "0"), n: i };
      await table.createEntity(e);
      expected.set(e.rowKey, i);
    }
    for (let i = 0; i < 10; i += 2) {
      await table.updateEntity({ partitionKey: "p", rowKey: String(i).padStart(2, "0"), n: i * 10 }, "Merge");
      expected.set(String(i).padStart(2, "0"), i * 10);
    }
    await table.deleteEntity("p", "01");
    expected.delete("01");
    for (const [rk, n] of expected) {
      assert.equal((await table.getEntity("p", rk)).n, n);
    }
    const report = await server.faults.get();
    const fired = report.rules.reduce((sum, r) => sum + r.fired, 0);
    assert.ok(fired >= 5, JSON.stringify(report));
    await server.faults.clear();
    const stored = new Map((await all(table.listEntities())).map((e) => [e.rowKey, e.n]));
    assert.deepEqual(stored, expected);
  });

  it("an insert whose answer is lost after commit is retried by the SDK and gets 409", async () => {
    const name = uniqueTableName("jsambiguous");
    const table = TableClient.fromConnectionString(server.connectionString, name, DEFAULT_RETRIES);
    await table.createTable();
    await server.faults.put({
      rules: [
        { table: name, operation: "InsertEntity", nth: 1, action: "drop-after-commit" },
        { table: name, operation: "InsertOrReplaceEntity", nth: 1, action: "drop-after-commit" },
      ],
    });
    // The JS pipeline retries a request whose connection was reset, whatever its method: the
    // retry of an insert that was applied finds the entity there.
    const conflict = await rejectsWith(
      () => table.createEntity({ partitionKey: "p", rowKey: "order-1", amount: 10 }),
      409,
      "EntityAlreadyExists",
    );
    assert.equal(errorCode(conflict), "EntityAlreadyExists");
    // Correct client: treat 409 on a retried insert as "maybe mine" and check what is stored.
    assert.equal((await table.getEntity("p", "order-1")).amount, 10);
    // Or write idempotently: the upsert's answer is lost too, the retry simply succeeds.
    await table.upsertEntity({ partitionKey: "p", rowKey: "order-2", amount: 20 }, "Replace");
    assert.equal((await table.getEntity("p", "order-2")).amount, 20);
    assert.deepEqual((await server.faults.get()).rules.map((r) => r.fired), [1, 1]);
    await server.faults.clear();
  });

  it("a batch hit by an injected failure leaves no partial change", async () => {
    const name = uniqueTableName("jsegt");
    const table = TableClient.fromConnectionString(server.connectionString, name, CLIENT_OPTIONS);
    await table.createTable();
    await server.faults.put({
      rules: [
        { table: name, operation: "batch", nth: 1, action: "error", error: "InternalError" },
        { table: name, operation: "batch", nth: 2, action: "drop-before-write" },
      ],
    });
    const actions = Array.from({ length: 20 }, (_, i) => ["create", { partitionKey: "p", rowKey: `r${i}` }]);
    await assert.rejects(() => table.submitTransaction(actions));
    assert.equal((await all(table.listEntities())).length, 0);
    await assert.rejects(() => table.submitTransaction(actions));
    assert.equal((await all(table.listEntities())).length, 0);
    await table.submitTransaction(actions);
    assert.equal((await all(table.listEntities())).length, 20);
    await server.faults.clear();
  });
});

describe("realism: random page breaks", { skip }, () => {
  let server;
  before(async () => {
    server = await startRealismServer(["--page-breaks", "random", "--realism-seed", "7"]);
  });
  after(async () => server?.stop());

  it("SDK page iterators return every entity exactly once", async () => {
    for (const [partitions, perPartition] of [[1, 9], [4, 6]]) {
      const table = TableClient.fromConnectionString(
        server.connectionString,
        uniqueTableName("jspaged"),
        CLIENT_OPTIONS,
      );
      await table.createTable();
      const expected = new Set();
      for (let p = 0; p < partitions; p++) {
        const actions = [];
        for (let r = 0; r < perPartition; r++) {
          actions.push(["create", { partitionKey: `p${p}`, rowKey: `r${r}` }]);
          expected.add(`p${p}/r${r}`);
        }
        await table.submitTransaction(actions);
      }
      for (const maxPageSize of [1, 5, 1000]) {
        const seen = [];
        let pages = 0;
        for await (const page of table.listEntities().byPage({ maxPageSize })) {
          pages++;
          for (const e of page) seen.push(`${e.partitionKey}/${e.rowKey}`);
        }
        assert.equal(new Set(seen).size, seen.length, "an entity was repeated");
        assert.deepEqual(new Set(seen), expected, "an entity was lost");
        assert.ok(pages >= 1);
      }
    }
  });
});
