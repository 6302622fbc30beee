// Point Azure.Data.Tables at tablestore and do a round trip.
// Reads the connection string from TABLESTORE_CONNECTION_STRING (default: the local server on
// port 10002); exits non-zero on any failure.
//
//   dotnet new console && dotnet add package Azure.Data.Tables && (replace Program.cs with this)

using System;
using System.Collections.Generic;
using System.Linq;
using Azure;
using Azure.Data.Tables;

const string DefaultConnectionString =
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" +
    "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
    "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;";

static void Check(bool condition, string message)
{
    if (!condition) throw new InvalidOperationException(message);
}

var connectionString = Environment.GetEnvironmentVariable("TABLESTORE_CONNECTION_STRING") ?? DefaultConnectionString;
var service = new TableServiceClient(connectionString);
var name = "example" + Guid.NewGuid().ToString("N")[..8];
var table = service.GetTableClient(name);
await table.CreateIfNotExistsAsync();
try
{
    await table.AddEntityAsync(new TableEntity("nl", "1") { ["Name"] = "Ada", ["Age"] = 36 });
    await table.UpsertEntityAsync(new TableEntity("nl", "2") { ["Name"] = "Bob", ["Age"] = 41 }, TableUpdateMode.Replace);

    TableEntity ada = await table.GetEntityAsync<TableEntity>("nl", "1");
    Check(ada.GetString("Name") == "Ada", $"GetEntity returned {ada.GetString("Name")}");

    var older = new List<string>();
    var filter = TableClient.CreateQueryFilter($"PartitionKey eq {"nl"} and Age gt {40}");
    await foreach (var entity in table.QueryAsync<TableEntity>(filter))
    {
        older.Add(entity.RowKey);
    }
    Check(older.SequenceEqual(new[] { "2" }), $"query returned {string.Join(",", older)}");

    // An entity group transaction: all or nothing, one partition.
    await table.SubmitTransactionAsync(new[]
    {
        new TableTransactionAction(TableTransactionActionType.UpsertReplace, new TableEntity("nl", "3") { ["Name"] = "Cy" }),
        new TableTransactionAction(TableTransactionActionType.Delete, new TableEntity("nl", "1")),
    });
    try
    {
        await table.GetEntityAsync<TableEntity>("nl", "1");
        Check(false, "entity 1 still exists after the transaction");
    }
    catch (RequestFailedException e) when (e.Status == 404)
    {
    }
}
finally
{
    await service.DeleteTableAsync(name);
}
Console.WriteLine("dotnet example: OK");
