// The on-disk store's start-up options through @azure/data-tables: a data folder created with
// `--compression off` answers as a compressed one, keeps its layout when restarted without the
// option (start-up says so), and a RAM tier smaller than the table (`--memory-budget 1`) gives
// the same answers. Servers are started here on folders of their own (TABLESTORE_BIN, set by
// ./test.sh).
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AzureNamedKeyCredential, TableClient } from "@azure/data-tables";
import { ACCOUNT_KEY, ACCOUNT_NAME, CLIENT_OPTIONS, all, serverBinary, startChildServer } from "./helpers.mjs";

const skip = !serverBinary() && "no tablestore binary (TABLESTORE_BIN) to start";

const start = (folder, ...args) =>
  startChildServer(["--silent", "--location", folder, ...args], { inMemory: false });

const tableOf = (server, name) =>
  new TableClient(`${server.endpoint}/${ACCOUNT_NAME}`, name, new AzureNamedKeyCredential(ACCOUNT_NAME, ACCOUNT_KEY), CLIENT_OPTIONS);

/** 900 entities in three partitions by batches of 100, then a merge and a delete. */
async function fill(table) {
  await table.createTable();
  for (let start = 0; start < 900; start += 300) {
    for (let p = 0; p < 3; p++) {
      const actions = [];
      for (let n = start; n < start + 300; n++) {
        if (n % 3 === p) actions.push(["upsert", { partitionKey: `p${p}`, rowKey: String(n).padStart(5, "0"), n, text: "x".repeat(400) }]);
      }
      await table.submitTransaction(actions);
    }
  }
  await table.updateEntity({ partitionKey: "p0", rowKey: "00000", n: -1 }, "Merge");
  await table.deleteEntity("p1", "00001");
}

async function answers(table) {
  const everything = (await all(table.listEntities())).map((e) => `${e.partitionKey}/${e.rowKey}/${e.n}`).sort();
  const filtered = (await all(table.listEntities({ queryOptions: { filter: "n lt 10 and PartitionKey ne 'p2'" } })))
    .map((e) => e.rowKey)
    .sort();
  const point = await table.getEntity("p0", "00000");
  return { count: everything.length, everything, filtered, point: point.n };
}

describe("storage options", { skip }, () => {
  test("an uncompressed folder answers as a compressed one and keeps its layout", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tablestore-js-storage-"));
    try {
      const results = {};
      for (const [folder, args] of [["plain", ["--compression", "off"]], ["packed", []]]) {
        const server = await start(join(dir, folder), ...args);
        try {
          const table = tableOf(server, "jsoptions");
          await fill(table);
          results[folder] = await answers(table);
        } finally {
          await server.stop();
        }
      }
      assert.deepEqual(results.plain, results.packed);
      assert.equal(results.plain.count, 899);
      assert.equal(results.plain.point, -1);
      const conf = (folder) => readFileSync(join(dir, folder, "__tablestore__", "conf"), "latin1");
      assert.match(conf("plain"), /use_compression: false/);
      assert.match(conf("packed"), /use_compression: true/);
      const again = await start(join(dir, "plain"));
      try {
        assert.match(again.log(), /Compression: off \(this data folder was created without it/);
        assert.deepEqual(await answers(tableOf(again, "jsoptions")), results.packed);
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a RAM tier smaller than the table answers as the default store", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tablestore-js-budget-"));
    try {
      const got = [];
      for (const args of [[], ["--memory-budget", "1"]]) {
        const server = await start(join(dir, String(got.length)), ...args);
        try {
          const table = tableOf(server, "jsbudget");
          await fill(table);
          const first = await answers(table);
          assert.deepEqual(await answers(table), first, "reads repeat while the tier loads and gives up");
          got.push(first);
        } finally {
          await server.stop();
        }
      }
      assert.deepEqual(got[1], got[0]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
