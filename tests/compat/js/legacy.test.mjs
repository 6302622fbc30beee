// The legacy Node SDK, azure-storage 2.10.7 (deprecated, still in many projects), against the
// server. It speaks API version 2018-03-28, asks for application/json;odata=minimalmetadata,
// signs with Shared Key, pages with continuation tokens and builds its own $batch bodies.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import azure from "azure-storage";
import { connectionString, uniqueTableName } from "./helpers.mjs";

const gen = azure.TableUtilities.entityGenerator;

/** Calls a callback-style TableService method; resolves with its result, rejects with its error. */
function call(service, method, ...args) {
  return new Promise((resolve, reject) => {
    service[method](...args, (err, result, response) => {
      if (err) reject(err);
      else resolve({ result, response });
    });
  });
}

async function rejectsStatus(promise, statusCode, code) {
  let caught;
  try {
    await promise;
  } catch (e) {
    caught = e;
  }
  assert.ok(caught, `expected a ${statusCode} error, but the call succeeded`);
  assert.equal(caught.statusCode, statusCode, `${caught.statusCode} ${caught.code}: ${caught.message}`);
  if (code !== undefined) assert.equal(caught.code, code);
}

function entity(pk, rk, props = {}) {
  const out = { PartitionKey: gen.String(pk), RowKey: gen.String(rk) };
  for (const [k, v] of Object.entries(props)) out[k] = v;
  return out;
}

describe("legacy azure-storage", () => {
  const service = azure.createTableService(connectionString());
  const name = uniqueTableName("legacyjs");

  before(async () => {
    const { result } = await call(service, "createTable", name);
    assert.equal(result.TableName, name);
  });
  after(async () => {
    await call(service, "deleteTable", name).catch(() => {});
  });

  test("tables: exists, create-if-not-exists, list, conflict", async () => {
    const { result } = await call(service, "createTableIfNotExists", name);
    assert.equal(result.created, false);
    assert.equal((await call(service, "doesTableExist", name)).result.exists, true);
    const listed = (await call(service, "listTablesSegmented", null)).result.entries;
    assert.ok(listed.includes(name));
    await rejectsStatus(call(service, "createTable", name), 409, "TableAlreadyExists");
  });

  test("typed entities, ETags and both upserts", async () => {
    const inserted = await call(
      service,
      "insertEntity",
      name,
      entity("p", "r", {
        Name: gen.String("Ada"),
        Big: gen.Int64("1099511627776"),
        Ok: gen.Boolean(true),
        Score: gen.Double(1.5),
        When: gen.DateTime(new Date("2024-01-02T03:04:05Z")),
      }),
    );
    const etag = inserted.result[".metadata"].etag;
    await rejectsStatus(call(service, "insertEntity", name, entity("p", "r")), 409, "EntityAlreadyExists");

    const got = (await call(service, "retrieveEntity", name, "p", "r")).result;
    assert.equal(got.Name._, "Ada");
    assert.equal(got.Big._, "1099511627776");
    assert.equal(got.Big.$, "Edm.Int64");
    assert.equal(got.Ok._, true);
    assert.equal(got.Score._, 1.5);
    assert.equal(got.When._.toISOString(), "2024-01-02T03:04:05.000Z");
    assert.equal(got[".metadata"].etag, etag);

    // Replace with the current ETag; then a merge with the stale one is 412.
    const replaced = await call(service, "replaceEntity", name, {
      ...entity("p", "r", { Name: gen.String("Bea") }),
      ".metadata": { etag },
    });
    assert.notEqual(replaced.result[".metadata"].etag, etag);
    await rejectsStatus(
      call(service, "mergeEntity", name, { ...entity("p", "r", { Name: gen.String("Cy") }), ".metadata": { etag } }),
      412,
      "UpdateConditionNotSatisfied",
    );
    let now = (await call(service, "retrieveEntity", name, "p", "r")).result;
    assert.equal(now.Name._, "Bea");
    assert.equal(now.Big, undefined);

    await call(service, "insertOrMergeEntity", name, entity("p", "r", { Extra: gen.Int32(7) }));
    now = (await call(service, "retrieveEntity", name, "p", "r")).result;
    assert.deepEqual([now.Name._, now.Extra._], ["Bea", 7]);
    await call(service, "insertOrReplaceEntity", name, entity("p", "r", { Only: gen.String("x") }));
    now = (await call(service, "retrieveEntity", name, "p", "r")).result;
    assert.equal(now.Name, undefined);
    assert.equal(now.Only._, "x");

    await rejectsStatus(
      call(service, "deleteEntity", name, { ...entity("p", "r"), ".metadata": { etag } }),
      412,
      "UpdateConditionNotSatisfied",
    );
    await call(service, "deleteEntity", name, entity("p", "r"));
    await rejectsStatus(call(service, "retrieveEntity", name, "p", "r"), 404, "ResourceNotFound");
  });

  test("paged and filtered queries", async () => {
    for (let i = 0; i < 7; i++) {
      await call(service, "insertEntity", name, entity("q", String(i).padStart(2, "0"), { n: gen.Int32(i) }));
    }
    const inQ = new azure.TableQuery().where("PartitionKey eq ?", "q");
    const pages = [];
    let token = null;
    do {
      const { result } = await call(service, "queryEntities", name, inQ.top(3), token);
      pages.push(result.entries.map((e) => e.RowKey._));
      token = result.continuationToken;
    } while (token);
    assert.deepEqual(pages, [["00", "01", "02"], ["03", "04", "05"], ["06"]]);

    const filtered = new azure.TableQuery()
      .select("n")
      .where("PartitionKey eq ?", "q")
      .and("n ge ?int32?", 4)
      .and("RowKey ne ?", "05");
    const { result } = await call(service, "queryEntities", name, filtered, null);
    assert.deepEqual(
      result.entries.map((e) => e.n._),
      [4, 6],
    );
    assert.ok(result.entries.every((e) => e.RowKey === undefined));
  });

  test("batch commits together and rolls back together", async () => {
    await call(service, "insertEntity", name, entity("b", "gone"));
    const batch = new azure.TableBatch();
    batch.insertEntity(entity("b", "a", { v: gen.Int32(1) }));
    batch.insertOrReplaceEntity(entity("b", "b", { v: gen.Int32(2) }));
    batch.deleteEntity(entity("b", "gone"));
    const { result } = await call(service, "executeBatch", name, batch);
    assert.equal(result.length, 3);
    assert.ok(result.every((r) => !r.error), JSON.stringify(result));

    const keys = async () =>
      (await call(service, "queryEntities", name, new azure.TableQuery().where("PartitionKey eq ?", "b"), null)).result.entries
        .map((e) => e.RowKey._)
        .sort();
    assert.deepEqual(await keys(), ["a", "b"]);

    const failing = new azure.TableBatch();
    failing.insertEntity(entity("b", "c"));
    failing.insertEntity(entity("b", "a"));
    let failed;
    try {
      const r = await call(service, "executeBatch", name, failing);
      failed = r.result.some((op) => op.error);
    } catch {
      failed = true;
    }
    assert.ok(failed, "a batch with a conflicting insert fails");
    assert.deepEqual(await keys(), ["a", "b"]);
  });
});
