// submitTransaction (entity group transactions, Azure docs: "Performing entity group transactions"). Group "batch":
// skip with TABLESTORE_SKIP=batch.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { TableTransaction } from "@azure/data-tables";
import { all, createTempTable, group, rejectsWith } from "./helpers.mjs";

describe("batch", group("batch"), () => {
  let client;
  let cleanup;
  let n = 0;
  const pk = () => `bp${++n}`;

  async function exists(p, r) {
    try {
      await client.getEntity(p, r);
      return true;
    } catch (e) {
      if (e.statusCode === 404) return false;
      throw e;
    }
  }

  // Client-side partition filter, so this group does not depend on $filter.
  async function inPartition(p) {
    return (await all(client.listEntities())).filter((e) => e.partitionKey === p);
  }

  before(async () => {
    [client, cleanup] = await createTempTable("batch");
  });
  after(async () => cleanup());

  test("every action kind in one transaction", async () => {
    const p = pk();
    for (const r of ["upd-m", "upd-r", "ups-m", "ups-r", "del"]) {
      await client.createEntity({ partitionKey: p, rowKey: r, old: 1 });
    }
    const tx = new TableTransaction();
    tx.createEntity({ partitionKey: p, rowKey: "new", v: "created" });
    tx.updateEntity({ partitionKey: p, rowKey: "upd-m", v: "merged" }, "Merge");
    tx.updateEntity({ partitionKey: p, rowKey: "upd-r", v: "replaced" }, "Replace");
    tx.upsertEntity({ partitionKey: p, rowKey: "ups-m", v: "merged" }, "Merge");
    tx.upsertEntity({ partitionKey: p, rowKey: "ups-r", v: "replaced" }, "Replace");
    tx.upsertEntity({ partitionKey: p, rowKey: "ups-new", v: "inserted" }, "Replace");
    tx.deleteEntity(p, "del");
    const result = await client.submitTransaction(tx.actions);
    assert.equal(result.status, 202);
    assert.equal(result.subResponses.length, 7);
    for (const sub of result.subResponses) assert.ok(sub.status >= 200 && sub.status < 300, `status ${sub.status}`);

    const byKey = Object.fromEntries((await inPartition(p)).map((e) => [e.rowKey, e]));
    assert.deepEqual(Object.keys(byKey).sort(), ["new", "upd-m", "upd-r", "ups-m", "ups-new", "ups-r"]);
    assert.equal(byKey["new"].v, "created");
    assert.equal(byKey["upd-m"].old, 1);
    assert.equal(byKey["upd-m"].v, "merged");
    assert.equal(byKey["upd-r"].old, undefined);
    assert.equal(byKey["ups-m"].old, 1);
    assert.equal(byKey["ups-r"].old, undefined);
    assert.equal(byKey["ups-new"].v, "inserted");

    // The SDK finds the insert's sub-response by the RowKey in its Location
    // header and reads the ETag from it.
    const created = result.getResponseForEntity("new");
    assert.ok(created, "insert sub-response carries Location with RowKey='new'");
    assert.equal(created.etag, byKey["new"].etag);
  });

  test("100 inserts in one transaction", async () => {
    const p = pk();
    const actions = Array.from({ length: 100 }, (_, i) => ["create", { partitionKey: p, rowKey: String(i).padStart(3, "0"), i }]);
    const result = await client.submitTransaction(actions);
    assert.equal(result.subResponses.length, 100);
    const stored = await inPartition(p);
    assert.deepEqual(stored.map((e) => e.i), Array.from({ length: 100 }, (_, i) => i));
  });

  test("a failing action fails the whole transaction and names its index", async () => {
    const p = pk();
    await client.createEntity({ partitionKey: p, rowKey: "existing", v: "original" });
    await client.createEntity({ partitionKey: p, rowKey: "to-update", v: "original" });
    const actions = [
      ["create", { partitionKey: p, rowKey: "a" }],
      ["update", { partitionKey: p, rowKey: "to-update", v: "changed" }, "Replace"],
      ["create", { partitionKey: p, rowKey: "existing" }],
      ["create", { partitionKey: p, rowKey: "b" }],
    ];
    const err = await rejectsWith(() => client.submitTransaction(actions), 409, "EntityAlreadyExists");
    assert.match(err.message, /^2:/);
    assert.equal(await exists(p, "a"), false);
    assert.equal(await exists(p, "b"), false);
    assert.equal((await client.getEntity(p, "existing")).v, "original");
    assert.equal((await client.getEntity(p, "to-update")).v, "original");
  });

  test("stale etag in a transaction is 412 and rolls back", async () => {
    const p = pk();
    const created = await client.createEntity({ partitionKey: p, rowKey: "r", v: 1 });
    await client.upsertEntity({ partitionKey: p, rowKey: "r", v: 2 });
    const actions = [
      ["create", { partitionKey: p, rowKey: "other" }],
      ["update", { partitionKey: p, rowKey: "r", v: 3 }, "Merge", { etag: created.etag }],
    ];
    const err = await rejectsWith(() => client.submitTransaction(actions), 412, "UpdateConditionNotSatisfied");
    assert.match(err.message, /^1:/);
    assert.equal((await client.getEntity(p, "r")).v, 2);
    assert.equal(await exists(p, "other"), false);
  });

  // Azure leaves the "N:" index out only when the failing action is the transaction's only one
  // (CloudStub's Azure.Data.Tables suite, run against a storage account).
  test("a missing entity names index 0 unless it is the only action", async () => {
    const p = pk();
    const alone = await rejectsWith(
      () => client.submitTransaction([["delete", { partitionKey: p, rowKey: "missing" }]]),
      404,
      "ResourceNotFound",
    );
    assert.match(alone.message, /^The specified resource does not exist\./);
    const first = await rejectsWith(
      () =>
        client.submitTransaction([
          ["delete", { partitionKey: p, rowKey: "missing" }],
          ["create", { partitionKey: p, rowKey: "new" }],
        ]),
      404,
      "ResourceNotFound",
    );
    assert.match(first.message, /^0:The specified resource does not exist\./);
    assert.equal(await exists(p, "new"), false);
  });

  test("more than 100 actions is rejected", async () => {
    const p = pk();
    const actions = Array.from({ length: 101 }, (_, i) => ["create", { partitionKey: p, rowKey: String(i) }]);
    const err = await rejectsWith(() => client.submitTransaction(actions), 400, "InvalidInput");
    assert.match(err.message, /^99:/);
    assert.equal(await exists(p, "0"), false);
  });

  test("the same entity twice is InvalidDuplicateRow", async () => {
    const p = pk();
    const actions = [
      ["upsert", { partitionKey: p, rowKey: "x", v: 1 }],
      ["upsert", { partitionKey: p, rowKey: "x", v: 2 }],
    ];
    const err = await rejectsWith(() => client.submitTransaction(actions), 400, "InvalidDuplicateRow");
    assert.match(err.message, /^1:/);
    assert.equal(await exists(p, "x"), false);
  });

  test("special-character keys in a transaction", async () => {
    const p = "A'b:@+,$=& c";
    const actions = [
      ["create", { partitionKey: p, rowKey: "k'1 ", v: 1 }],
      ["upsert", { partitionKey: p, rowKey: "=&", v: 2 }],
    ];
    const result = await client.submitTransaction(actions);
    assert.equal(result.subResponses.length, 2);
    assert.equal((await client.getEntity(p, "k'1 ")).v, 1);
    assert.equal((await client.getEntity(p, "=&")).v, 2);
  });
});
