// listEntities with $filter / $select (Azure docs: "Querying tables and entities"). Group "query": skip with
// TABLESTORE_SKIP=query.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { odata } from "@azure/data-tables";
import { all, createTempTable, group, rejectsWith } from "./helpers.mjs";

const COUNT = 60;
const BASE = Date.UTC(2020, 0, 1);

describe("query", group("query"), () => {
  let client;
  let cleanup;

  const query = async (filter, extra = {}) =>
    all(client.listEntities({ queryOptions: { filter, ...extra } }));
  const ns = (entities) => entities.map((e) => e.n);

  before(async () => {
    [client, cleanup] = await createTempTable("query");
    const entities = Array.from({ length: COUNT }, (_, n) => ({
      partitionKey: n < 30 ? "pA" : "pB",
      rowKey: String(n).padStart(3, "0"),
      n,
      big: { value: String(BigInt(n) * 10000000000n), type: "Int64" },
      dbl: n + 0.5,
      even: n % 2 === 0,
      name: `name'${n}`,
      when: new Date(BASE + n * 3600_000),
      guid: { value: `00000000-0000-0000-0000-${String(n).padStart(12, "0")}`, type: "Guid" },
    }));
    const queue = entities.slice();
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        for (let e = queue.shift(); e; e = queue.shift()) await client.createEntity(e);
      }),
    );
  });
  after(async () => cleanup());

  test("odata filter on keys", async () => {
    assert.deepEqual(ns(await query(odata`PartitionKey eq ${"pB"} and RowKey lt ${"033"}`)), [30, 31, 32]);
    assert.deepEqual(ns(await query(odata`RowKey eq ${"007"}`)), [7]);
  });

  test("odata filter on each type", async () => {
    assert.deepEqual(ns(await query(odata`n ge ${57}`)), [57, 58, 59]);
    assert.deepEqual(ns(await query("big gt 570000000000L")), [58, 59]);
    assert.deepEqual(ns(await query(odata`dbl lt ${2.5}`)), [0, 1]);
    assert.deepEqual(ns(await query(odata`even eq ${false} and n lt ${6}`)), [1, 3, 5]);
    assert.deepEqual(ns(await query(odata`name eq ${"name'12"}`)), [12]);
    assert.deepEqual(ns(await query(odata`when ge ${new Date(BASE + 58 * 3600_000)}`)), [58, 59]);
    assert.deepEqual(ns(await query("guid eq guid'00000000-0000-0000-0000-000000000042'")), [42]);
  });

  test("or, not and parentheses", async () => {
    assert.deepEqual(ns(await query("(n lt 2) or (n gt 57)")), [0, 1, 58, 59]);
    assert.deepEqual(ns(await query("not (even eq true) and n lt 5")), [1, 3]);
  });

  // A bare true/false is a filter of its own, as the .NET SDK's LINQ translation and health
  // checks send it; "True" is not the literal (filters are case-sensitive).
  test("bare true and false in a filter", async () => {
    assert.deepEqual(ns(await query("false")), []);
    assert.equal((await query("true")).length, COUNT);
    assert.deepEqual(ns(await query("(true and n lt 2) or (false or n eq 59)")), [0, 1, 59]);
    await rejectsWith(() => query("even eq True"), 400, "InvalidInput");
  });

  test("select returns only the listed properties", async () => {
    const got = await query(odata`n lt ${2}`, { select: ["n", "name"] });
    assert.equal(got.length, 2);
    for (const e of got) {
      assert.deepEqual(Object.keys(e).filter((k) => !k.startsWith("odata.") && k !== "etag").sort(), ["n", "name"]);
    }
  });

  test("filtered results page with maxPageSize", async () => {
    const pages = [];
    for await (const page of client
      .listEntities({ queryOptions: { filter: odata`even eq ${true}` } })
      .byPage({ maxPageSize: 7 })) {
      assert.ok(page.length <= 7);
      pages.push(ns(page));
    }
    assert.deepEqual(pages.flat(), Array.from({ length: 30 }, (_, i) => i * 2));
    assert.ok(pages.length >= 5);
  });

  test("no match returns nothing; a bad filter is 400 InvalidInput", async () => {
    assert.deepEqual(await query(odata`PartitionKey eq ${"nope"}`), []);
    await rejectsWith(() => query("aaa bbb ccc"), 400, "InvalidInput");
  });
});
