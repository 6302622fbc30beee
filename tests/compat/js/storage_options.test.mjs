// The on-disk store's start-up options through @azure/data-tables: data folders created with
// every `--compression` (lz4, the default; zstd; off) give the same answers and keep their
// layout when restarted without the option (start-up says so), `tablestore import --compression`
// creates folders of each layout that serve the same answers, and a RAM tier smaller than the table
// (`--memory-budget 1`) gives the same answers. Servers are started here on folders of their own (TABLESTORE_BIN, set by
// ./test.sh).
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
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
  test("every compression gives the same answers and a folder keeps its layout", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tablestore-js-storage-"));
    // [--compression, sled's log compressed, store format]: lz4 compresses each entity alone.
    const layouts = [["lz4", false, "2"], ["zstd", true, "1"], ["off", false, "1"]];
    try {
      const results = {};
      for (const [name] of layouts) {
        const server = await start(join(dir, name), "--compression", name);
        try {
          const table = tableOf(server, "jsoptions");
          await fill(table);
          results[name] = await answers(table);
        } finally {
          await server.stop();
        }
      }
      assert.deepEqual(results.zstd, results.lz4);
      assert.deepEqual(results.off, results.lz4);
      assert.equal(results.lz4.count, 899);
      assert.equal(results.lz4.point, -1);
      const file = (folder, name) => readFileSync(join(dir, folder, "__tablestore__", name), "latin1");
      for (const [name, logCompressed, format] of layouts) {
        assert.match(file(name, "conf"), new RegExp(`use_compression: ${logCompressed}`));
        assert.equal(file(name, "tablestore-format").split("\n")[0], `tablestore data folder, store format ${format}`);
      }
      for (const name of ["zstd", "off"]) {
        const again = await start(join(dir, name));
        try {
          assert.match(again.log(), new RegExp(`Compression: ${name} \\(this data folder was created with it`));
          assert.deepEqual(await answers(tableOf(again, "jsoptions")), results.lz4);
        } finally {
          await again.stop();
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an import into a new folder takes the compression asked for", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tablestore-js-import-"));
    const run = (...args) => execFileSync(serverBinary(), args, { stdio: ["ignore", "pipe", "pipe"] });
    try {
      const source = await start(join(dir, "source"));
      let expected;
      try {
        const table = tableOf(source, "jsmoved");
        await fill(table);
        expected = await answers(table);
      } finally {
        await source.stop();
      }
      run("export", "--location", join(dir, "source"), "-q", "--out", join(dir, "dump"));
      for (const [name, logCompressed] of [["lz4", false], ["zstd", true], ["off", false]]) {
        const folder = join(dir, `imported-${name}`);
        run("import", "--location", folder, "--compression", name, "-q", join(dir, "dump"));
        assert.match(readFileSync(join(folder, "__tablestore__", "conf"), "latin1"), new RegExp(`use_compression: ${logCompressed}`));
        const server = await start(folder);
        try {
          assert.match(server.log(), new RegExp(`Compression: ${name} \\(`));
          assert.deepEqual(await answers(tableOf(server, "jsmoved")), expected);
        } finally {
          await server.stop();
        }
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
