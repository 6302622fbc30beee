// Request shapes that real clients send and Azure accepts (issue 22). Booleans sent as
// annotated strings, as the Azure CLI and Storage Explorer send them: Azure stores a boolean
// and takes the text in any letter case. { value: "TRUE", type: "Boolean" } makes the SDK
// send "Ok":"TRUE","Ok@odata.type":"Edm.Boolean".
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { all, createTempTable, rejectsWith } from "./helpers.mjs";

const typed = (partitionKey, rowKey, text) => ({ partitionKey, rowKey, Ok: { value: text, type: "Boolean" } });

describe("client shapes", () => {
  let client;
  let cleanup;

  before(async () => {
    [client, cleanup] = await createTempTable("shapes");
  });
  after(async () => cleanup());

  test("annotated boolean strings are stored as booleans", async () => {
    await client.createEntity(typed("p", "1", "true"));
    await client.createEntity(typed("p", "2", "FALSE"));
    await client.upsertEntity(typed("p", "3", "True"), "Replace");
    await client.upsertEntity(typed("p", "4", "false"), "Merge");
    await client.updateEntity(typed("p", "1", "fAlSe"), "Replace");
    await client.updateEntity(typed("p", "2", "TRUE"), "Merge");
    await client.submitTransaction([
      ["create", typed("q", "a", "TRUE")],
      ["upsert", typed("q", "b", "false"), "Replace"],
    ]);
    const got = Object.fromEntries(
      (await all(client.listEntities())).map((e) => [`${e.partitionKey}${e.rowKey}`, e.Ok]),
    );
    assert.deepEqual(got, { p1: false, p2: true, p3: true, p4: false, qa: true, qb: false });
  });

  test("$top=0 answers an empty page (Storage Explorer's show top 0)", async () => {
    await client.createEntity({ partitionKey: "zero", rowKey: "a" });
    const pages = [];
    for await (const page of client.listEntities({ queryOptions: { filter: "PartitionKey eq 'zero'" } }).byPage({ maxPageSize: 0 })) {
      pages.push([...page]);
    }
    assert.deepEqual(pages, [[]]);
  });

  test("other boolean text is 400 InvalidInput", async () => {
    for (const text of ["yes", "1"]) {
      await rejectsWith(() => client.createEntity(typed("p", "x", text)), 400, "InvalidInput");
    }
  });
});
