// Entities: CRUD, upserts, typed values, ETag conflicts (Azure docs: "Get Entity" through "Insert Or Merge Entity", "Update Entity", "Payload format for Table service operations").
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { createTempTable, errorCode, rejectsWith } from "./helpers.mjs";

/** The entity's custom properties (no keys or metadata). */
function custom(entity) {
  const { partitionKey, rowKey, etag, timestamp, ...rest } = entity;
  // The SDK passes control members such as odata.metadata through; drop them.
  return Object.fromEntries(Object.entries(rest).filter(([k]) => !k.startsWith("odata.")));
}

describe("entities", () => {
  let client;
  let cleanup;
  let n = 0;
  // Each test uses its own partition of one shared table.
  const pk = () => `p${++n}`;

  before(async () => {
    [client, cleanup] = await createTempTable("entities");
  });
  after(async () => cleanup());

  test("createEntity and getEntity", async () => {
    const p = pk();
    const created = await client.createEntity({ partitionKey: p, rowKey: "r", name: "Ada", age: 36, ok: true });
    assert.ok(created.etag);
    const got = await client.getEntity(p, "r");
    assert.equal(got.partitionKey, p);
    assert.equal(got.rowKey, "r");
    assert.deepEqual(custom(got), { name: "Ada", age: 36, ok: true });
    assert.equal(got.etag, created.etag);
    assert.match(got.etag, /^W\/"datetime'.+'"$/);
    assert.ok(typeof got.timestamp === "string" && got.timestamp.endsWith("Z"));
    // The ETag is built from the Timestamp text (Azure docs: "Update Entity").
    assert.equal(got.etag, `W/"datetime'${encodeURIComponent(got.timestamp)}'"`);
  });

  test("duplicate insert is 409 EntityAlreadyExists", async () => {
    const p = pk();
    await client.createEntity({ partitionKey: p, rowKey: "r", v: 1 });
    await rejectsWith(() => client.createEntity({ partitionKey: p, rowKey: "r", v: 2 }), 409, "EntityAlreadyExists");
    assert.equal((await client.getEntity(p, "r")).v, 1);
  });

  test("missing entity is 404 ResourceNotFound", async () => {
    await rejectsWith(() => client.getEntity(pk(), "nope"), 404, "ResourceNotFound");
    await rejectsWith(
      () => client.updateEntity({ partitionKey: "x", rowKey: "nope", v: 1 }, "Replace"),
      404,
      "ResourceNotFound",
    );
  });

  test("updateEntity Replace removes other properties, Merge keeps them", async () => {
    const p = pk();
    await client.createEntity({ partitionKey: p, rowKey: "r", a: 1, b: 2 });
    await client.updateEntity({ partitionKey: p, rowKey: "r", b: 20 }, "Merge");
    assert.deepEqual(custom(await client.getEntity(p, "r")), { a: 1, b: 20 });
    await client.updateEntity({ partitionKey: p, rowKey: "r", c: 3 }, "Replace");
    assert.deepEqual(custom(await client.getEntity(p, "r")), { c: 3 });
  });

  test("upsertEntity inserts, then merges or replaces", async () => {
    const p = pk();
    await client.upsertEntity({ partitionKey: p, rowKey: "m", a: 1 }, "Merge");
    await client.upsertEntity({ partitionKey: p, rowKey: "m", b: 2 }, "Merge");
    assert.deepEqual(custom(await client.getEntity(p, "m")), { a: 1, b: 2 });
    await client.upsertEntity({ partitionKey: p, rowKey: "r", a: 1 }, "Replace");
    await client.upsertEntity({ partitionKey: p, rowKey: "r", b: 2 }, "Replace");
    assert.deepEqual(custom(await client.getEntity(p, "r")), { b: 2 });
  });

  test("deleteEntity", async () => {
    const p = pk();
    await client.createEntity({ partitionKey: p, rowKey: "r" });
    await client.deleteEntity(p, "r");
    await rejectsWith(() => client.getEntity(p, "r"), 404, "ResourceNotFound");
  });

  test("deleting a missing entity is 404 ResourceNotFound", async () => {
    await rejectsWith(() => client.deleteEntity(pk(), "nope"), 404, "ResourceNotFound");
  });

  test("ETag conflicts: stale update and delete fail with 412", async () => {
    const p = pk();
    await client.createEntity({ partitionKey: p, rowKey: "r", v: 1 });
    const stale = await client.getEntity(p, "r");
    const fresh = await client.updateEntity({ partitionKey: p, rowKey: "r", v: 2 }, "Merge", { etag: stale.etag });
    assert.notEqual(fresh.etag, stale.etag);

    for (const mode of ["Merge", "Replace"]) {
      const err = await rejectsWith(
        () => client.updateEntity({ partitionKey: p, rowKey: "r", v: 3 }, mode, { etag: stale.etag }),
        412,
        "UpdateConditionNotSatisfied",
      );
      assert.equal(err.name, "RestError");
    }
    await rejectsWith(() => client.deleteEntity(p, "r", { etag: stale.etag }), 412, "UpdateConditionNotSatisfied");
    assert.equal((await client.getEntity(p, "r")).v, 2);

    // The current ETag works; "*" matches anything.
    await client.updateEntity({ partitionKey: p, rowKey: "r", v: 4 }, "Replace", { etag: fresh.etag });
    await client.updateEntity({ partitionKey: p, rowKey: "r", v: 5 }, "Replace", { etag: "*" });
    const current = await client.getEntity(p, "r");
    assert.equal(current.v, 5);
    await client.deleteEntity(p, "r", { etag: current.etag });
    await rejectsWith(() => client.getEntity(p, "r"), 404);
  });

  test("typed values round-trip", async () => {
    const p = pk();
    const date = new Date("2021-07-08T09:10:09.123Z");
    const bytes = new Uint8Array([0, 1, 2, 253, 254, 255]);
    await client.createEntity({
      partitionKey: p,
      rowKey: "r",
      str: "text",
      int32: 2147483647,
      int64: { value: "9223372036854775807", type: "Int64" },
      int64neg: { value: "-9223372036854775808", type: "Int64" },
      bigint: 12345678901234n,
      dbl: 3.25,
      dblTyped: { value: "5", type: "Double" },
      bool: false,
      date,
      dateText: { value: "2021-07-08T09:10:09.1234567Z", type: "DateTime" },
      guid: { value: "c9da6455-213d-42c9-9a79-3e9149a57833", type: "Guid" },
      bin: bytes,
    });
    const got = await client.getEntity(p, "r");
    assert.equal(got.str, "text");
    assert.equal(got.int32, 2147483647);
    assert.equal(got.int64, 9223372036854775807n);
    assert.equal(got.int64neg, -9223372036854775808n);
    assert.equal(got.bigint, 12345678901234n);
    assert.equal(got.dbl, 3.25);
    assert.equal(got.dblTyped, 5);
    assert.equal(got.bool, false);
    assert.ok(got.date instanceof Date);
    assert.equal(got.date.toISOString(), date.toISOString());
    assert.ok(got.dateText instanceof Date);
    assert.deepEqual(got.guid, { value: "c9da6455-213d-42c9-9a79-3e9149a57833", type: "Guid" });
    assert.ok(got.bin instanceof Uint8Array);
    assert.deepEqual(Array.from(got.bin), Array.from(bytes));
  });

  test("typed values with disableTypeConversion keep the wire text", async () => {
    const p = pk();
    await client.createEntity({
      partitionKey: p,
      rowKey: "r",
      int64: { value: "255", type: "Int64" },
      dateText: { value: "2021-07-08T09:10:09.1234567Z", type: "DateTime" },
      zeroFraction: { value: "1973-10-04T00:00:00.000000Z", type: "DateTime" },
      dbl: { value: "2", type: "Double" },
      nan: { value: "NaN", type: "Double" },
      inf: { value: "Infinity", type: "Double" },
    });
    const got = await client.getEntity(p, "r", { disableTypeConversion: true });
    assert.deepEqual(got.int64, { value: "255", type: "Int64" });
    assert.deepEqual(got.dateText, { value: "2021-07-08T09:10:09.1234567Z", type: "DateTime" });
    // Azure re-formats DateTime values: a zero fraction is dropped (Azure docs: "Understanding the Table service data model").
    assert.deepEqual(got.zeroFraction, { value: "1973-10-04T00:00:00Z", type: "DateTime" });
    // Azure writes integral doubles as 2.0 without annotation; JSON.parse makes
    // that 2, so the SDK cannot tell the type -- only the value is checked.
    assert.equal(got.dbl.value, "2");
    assert.deepEqual(got.nan, { value: "NaN", type: "Double" });
    assert.deepEqual(got.inf, { value: "Infinity", type: "Double" });
  });

  test("keys with special characters round-trip", async () => {
    const keys = ["A'aaa_bbbb2\"", ":@", "+,$", "=& ", "a b", "100%", "caf\u00e9", "\u554a\u9f44", "emoji\u{1F600}", ""];
    for (const key of keys) {
      await client.createEntity({ partitionKey: key, rowKey: key, v: key });
      const got = await client.getEntity(key, key);
      assert.equal(got.partitionKey, key);
      assert.equal(got.rowKey, key);
      assert.equal(got.v, key);
      await client.updateEntity({ partitionKey: key, rowKey: key, w: 1 }, "Merge");
      assert.equal((await client.getEntity(key, key)).w, 1);
      await client.deleteEntity(key, key);
      await rejectsWith(() => client.getEntity(key, key), 404);
    }
  });

  test("property name too long is 400 PropertyNameTooLong", async () => {
    const err = await rejectsWith(
      () => client.createEntity({ partitionKey: pk(), rowKey: "r", ["p".repeat(256)]: 1 }),
      400,
    );
    assert.equal(errorCode(err), "PropertyNameTooLong");
  });
});
