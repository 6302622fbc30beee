// Tables: create, delete, list (Azure docs: "Query Tables", "Create Table", "Delete Table", "Understanding the Table service data model").
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  ACCOUNT_KEY,
  ACCOUNT_NAME,
  CLIENT_OPTIONS,
  all,
  endpoint,
  rejectsWith,
  serviceClient,
  tableClient,
  uniqueTableName,
} from "./helpers.mjs";
import { TableServiceClient } from "@azure/data-tables";

const service = serviceClient();

async function tableNames(options) {
  return (await all(service.listTables(options))).map((t) => t.name);
}

describe("tables", () => {
  test("createTable then the table is listed and usable", async () => {
    const name = uniqueTableName("Create");
    await service.createTable(name);
    try {
      assert.ok((await tableNames()).includes(name));
      const client = tableClient(name);
      await client.createEntity({ partitionKey: "p", rowKey: "r", v: 1 });
      assert.equal((await client.getEntity("p", "r")).v, 1);
    } finally {
      await service.deleteTable(name);
    }
  });

  test("creating an existing table answers 409 TableAlreadyExists (the SDK tolerates it)", async () => {
    const name = uniqueTableName("Dup");
    await service.createTable(name);
    try {
      for (const variant of [name, name.toUpperCase(), name.toLowerCase()]) {
        let status;
        let code;
        await service.createTable(variant, {
          onResponse: (raw) => {
            status = raw.status;
            code = raw.parsedBody?.odataError?.code;
          },
        });
        assert.equal(status, 409, `createTable(${variant})`);
        assert.equal(code, "TableAlreadyExists", `createTable(${variant})`);
      }
      const matching = (await tableNames()).filter((n) => n.toLowerCase() === name.toLowerCase());
      assert.deepEqual(matching, [name]);
    } finally {
      await service.deleteTable(name);
    }
  });

  test("invalid table names are rejected with 400", async () => {
    for (const [bad, code] of [
      ["my_table", "InvalidResourceName"],
      ["tbl-with-dash", "InvalidResourceName"],
      ["ab", "OutOfRangeInput"],
      ["t" + "x".repeat(63), "OutOfRangeInput"],
    ]) {
      await rejectsWith(() => service.createTable(bad), 400, code);
    }
  });

  test("deleteTable removes the table and its entities", async () => {
    const name = uniqueTableName("Delete");
    const client = tableClient(name);
    await client.createTable();
    await client.createEntity({ partitionKey: "p", rowKey: "r" });
    let status;
    await client.deleteTable({ onResponse: (raw) => (status = raw.status) });
    assert.equal(status, 204);
    assert.ok(!(await tableNames()).includes(name));
    await rejectsWith(() => client.getEntity("p", "r"), 404, "TableNotFound");
  });

  test("deleting a missing table answers 404 ResourceNotFound (the SDK tolerates it)", async () => {
    let status;
    let code;
    await service.deleteTable(uniqueTableName("Never"), {
      onResponse: (raw) => {
        status = raw.status;
        code = raw.parsedBody?.odataError?.code;
      },
    });
    assert.equal(status, 404);
    assert.equal(code, "ResourceNotFound");
  });

  test("listTables preserves case and orders by lower-cased name", async () => {
    const prefix = "js" + randomUUID().replace(/-/g, "").slice(0, 10);
    const names = [`${prefix}B1`, `${prefix}a2`, `${prefix}C3`];
    for (const n of names) await service.createTable(n);
    try {
      const listed = (await tableNames()).filter((n) => n.toLowerCase().startsWith(prefix));
      assert.deepEqual(listed, [`${prefix}a2`, `${prefix}B1`, `${prefix}C3`]);
    } finally {
      for (const n of names) await service.deleteTable(n);
    }
  });

  test("listTables byPage with maxPageSize and continuation tokens", async () => {
    const prefix = "jp" + randomUUID().replace(/-/g, "").slice(0, 10);
    const names = Array.from({ length: 5 }, (_, i) => `${prefix}${i}`);
    for (const n of names) await service.createTable(n);
    try {
      const pages = [];
      let token;
      for await (const page of service.listTables().byPage({ maxPageSize: 2 })) {
        assert.ok(page.length <= 2, `page of ${page.length}`);
        pages.push(page.map((t) => t.name));
        if (pages.length === 1) token = page.continuationToken;
      }
      assert.ok(token, "the first page carries a continuation token");
      const seen = pages.flat();
      assert.deepEqual(seen.filter((n) => n.startsWith(prefix)), names);
      assert.equal(new Set(seen.map((n) => n.toLowerCase())).size, seen.length);
      assert.ok(pages.length >= 3);

      // Resume from the first page's token.
      const resumed = [];
      for await (const page of service.listTables().byPage({ maxPageSize: 2, continuationToken: token })) {
        resumed.push(...page.map((t) => t.name));
      }
      assert.deepEqual(resumed.filter((n) => n.startsWith(prefix)), names.filter((n) => !pages[0].includes(n)));
    } finally {
      for (const n of names) await service.deleteTable(n);
    }
  });

  // `TableEndpoint=…/devstoreaccount1/<table>`, a common slip: the SDK sends `…/<table>/Tables`
  // and tablestore answers as Azure does (the SDKs' own suites recorded it).
  test("a table name in the service URL is answered as Azure answers it", async () => {
    const name = uniqueTableName("InUrl");
    const bad = TableServiceClient.fromConnectionString(
      `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT_NAME};AccountKey=${ACCOUNT_KEY};` +
        `TableEndpoint=${endpoint()}/${ACCOUNT_NAME}/${name};`,
      CLIENT_OPTIONS,
    );
    await rejectsWith(() => bad.createTable(name), 404, "TableNotFound");
    await service.createTable(name);
    try {
      await rejectsWith(() => bad.createTable(name), 400, "PropertiesNeedValue");
      await rejectsWith(() => bad.deleteTable(name), 400, "InvalidInput");
      await rejectsWith(() => all(bad.listTables()), 501, "NotImplemented");
      assert.ok((await tableNames()).includes(name), "nothing ran");
    } finally {
      await service.deleteTable(name);
    }
  });

  // The page that ends a `TableName` range carries no continuation: no extra, empty page.
  test("the page that ends a name range is the last", async () => {
    const prefix = `${uniqueTableName("zzj")}a`;
    const names = [0, 1, 2, 3].map((i) => `${prefix}${i}`);
    const outside = `${prefix.slice(0, -1)}bx`;
    for (const n of [...names, outside]) await service.createTable(n);
    try {
      const queryOptions = {
        filter: `TableName ge '${prefix}' and TableName lt '${prefix.slice(0, -1)}b'`,
      };
      const pages = [];
      for await (const page of service.listTables({ queryOptions }).byPage({ maxPageSize: 2 })) {
        pages.push(page.map((t) => t.name));
      }
      assert.deepEqual(pages, [names.slice(0, 2), names.slice(2)]);
    } finally {
      for (const n of [...names, outside]) await service.deleteTable(n);
    }
  });
});
