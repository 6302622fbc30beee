// Point @azure/data-tables at tablestore and do a round trip.
//
// Reads the connection string from TABLESTORE_CONNECTION_STRING (default: the local server on
// port 10002) and exits non-zero on any failure.
//
//   npm install @azure/data-tables
//   TABLESTORE_CONNECTION_STRING='DefaultEndpointsProtocol=http;...' node tables_example.mjs

import { odata, RestError, TableClient, TableServiceClient } from "@azure/data-tables";

const DEFAULT_CONNECTION_STRING =
  "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" +
  "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
  "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;";

const connectionString = process.env.TABLESTORE_CONNECTION_STRING ?? DEFAULT_CONNECTION_STRING;
// The JS SDK refuses to sign requests over plain http unless told to.
const options = { allowInsecureConnection: true };

function check(condition, message) {
  if (!condition) {
    throw new Error(message);
  }
}

async function main() {
  const service = TableServiceClient.fromConnectionString(connectionString, options);
  const name = "example" + Math.random().toString(16).slice(2, 10);
  await service.createTable(name);
  const table = TableClient.fromConnectionString(connectionString, name, options);
  try {
    await table.createEntity({ partitionKey: "nl", rowKey: "1", Name: "Ada", Age: 36 });
    await table.upsertEntity({ partitionKey: "nl", rowKey: "2", Name: "Bob", Age: 41 }, "Replace");

    const ada = await table.getEntity("nl", "1");
    check(ada.Name === "Ada", `getEntity returned ${JSON.stringify(ada)}`);

    const older = [];
    const filter = odata`PartitionKey eq ${"nl"} and Age gt ${40}`;
    for await (const entity of table.listEntities({ queryOptions: { filter } })) {
      older.push(entity.rowKey);
    }
    check(JSON.stringify(older) === '["2"]', `query returned ${JSON.stringify(older)}`);

    // An entity group transaction: all or nothing, one partition.
    await table.submitTransaction([
      ["upsert", { partitionKey: "nl", rowKey: "3", Name: "Cy" }],
      ["delete", { partitionKey: "nl", rowKey: "1" }],
    ]);
    try {
      await table.getEntity("nl", "1");
      check(false, "entity 1 still exists after the transaction");
    } catch (e) {
      if (!(e instanceof RestError) || e.statusCode !== 404) throw e;
    }

    const names = [];
    for await (const t of service.listTables()) names.push(t.name);
    check(names.includes(name), `listTables returned ${JSON.stringify(names)}`);
  } finally {
    await service.deleteTable(name);
  }
  console.log("javascript example: OK");
}

main().catch((e) => {
  console.error(`javascript example: FAILED: ${e?.stack ?? e}`);
  process.exit(1);
});
