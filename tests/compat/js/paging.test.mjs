// listEntities paging via byPage and continuation tokens (Azure docs: "Query timeout and pagination").
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { all, compareOrdinal, createTempTable } from "./helpers.mjs";

const PARTITIONS = ["a", "b"];
const PER_PARTITION = 550;
const TOTAL = PARTITIONS.length * PER_PARTITION; // 1,100: more than one 1,000-entity page

function keyOf(e) {
  return `${e.partitionKey}|${e.rowKey}`;
}

describe("paging", () => {
  let client;
  let cleanup;
  let expected;

  before(async () => {
    [client, cleanup] = await createTempTable("paging");
    const entities = [];
    for (const partitionKey of PARTITIONS) {
      for (let i = 0; i < PER_PARTITION; i++) entities.push({ partitionKey, rowKey: String(i), n: i });
    }
    // Single inserts from a few concurrent workers (no $batch here).
    const queue = entities.slice().reverse();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let e = queue.pop(); e; e = queue.pop()) await client.createEntity(e);
      }),
    );
    expected = entities
      .slice()
      .sort((x, y) => compareOrdinal(x.partitionKey, y.partitionKey) || compareOrdinal(x.rowKey, y.rowKey))
      .map(keyOf);
  });
  after(async () => cleanup());

  test("listEntities returns everything in (PartitionKey, RowKey) ordinal order", async () => {
    const got = (await all(client.listEntities())).map(keyOf);
    assert.equal(got.length, TOTAL);
    assert.deepEqual(got, expected);
    assert.deepEqual(got.slice(0, 4), ["a|0", "a|1", "a|10", "a|100"]);
  });

  test("default pages hold at most 1,000 entities", async () => {
    const pages = [];
    for await (const page of client.listEntities().byPage()) pages.push(page.map(keyOf));
    assert.ok(pages.length >= 2, `${pages.length} pages`);
    for (const p of pages) assert.ok(p.length <= 1000, `page of ${p.length}`);
    assert.deepEqual(pages.flat(), expected);
  });

  test("byPage with maxPageSize and continuation tokens", async () => {
    const pages = [];
    const tokens = [];
    for await (const page of client.listEntities().byPage({ maxPageSize: 150 })) {
      assert.ok(page.length <= 150, `page of ${page.length}`);
      pages.push(page.map(keyOf));
      tokens.push(page.continuationToken);
    }
    assert.deepEqual(pages.flat(), expected);
    assert.ok(pages.length >= Math.ceil(TOTAL / 150));
    assert.equal(tokens.at(-1), undefined, "the last page has no continuation token");
    assert.ok(tokens.slice(0, -1).every((t) => typeof t === "string" && t.length > 0));

    // Resume from the token after the third page with a new iterator.
    const resumed = [];
    for await (const page of client.listEntities().byPage({ maxPageSize: 150, continuationToken: tokens[2] })) {
      resumed.push(...page.map(keyOf));
    }
    assert.deepEqual(resumed, expected.slice(pages.slice(0, 3).flat().length));
  });

  test("entities listed carry their values and metadata", async () => {
    let seen = 0;
    for await (const e of client.listEntities()) {
      assert.equal(e.n, Number(e.rowKey));
      assert.match(e.etag, /^W\/"datetime'/);
      assert.ok(e.timestamp);
      seen++;
    }
    assert.equal(seen, TOTAL);
  });
});
