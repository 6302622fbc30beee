"""The `tablestore` fixture with the Cosmos flavour, as docs/cosmos.md shows it
(`tablestore_args = --flavor cosmos` in pytest.ini): scripts/ci/packages.sh runs this file alone
with that setting (`-o tablestore_args=--flavor cosmos`)."""

import pytest
from azure.data.tables import TableServiceClient, UpdateMode


def test_the_fixture_serves_the_cosmos_flavour(tablestore, request):
    if "--flavor cosmos" not in request.config.getini("tablestore_args"):
        pytest.skip("run with -o tablestore_args='--flavor cosmos'")
    assert tablestore.account == "localhost"
    assert "TableEndpoint=http://localhost:" in tablestore.connection_string
    service = TableServiceClient.from_connection_string(tablestore.connection_string)
    # Case-sensitive table names, as in Cosmos DB: two tables.
    orders = service.create_table("Orders")
    service.create_table("orders")
    assert sorted(t.name for t in service.list_tables()) == ["Orders", "orders"]
    # The SDK took the endpoint for Cosmos: its merge goes as POST + X-HTTP-Method: MERGE,
    # which the Cosmos flavour accepts (a PATCH would be refused with 405).
    orders.upsert_entity({"PartitionKey": "nl", "RowKey": "1", "Name": "Ada"})
    orders.upsert_entity({"PartitionKey": "nl", "RowKey": "1", "Age": 36}, mode=UpdateMode.MERGE)
    entity = orders.get_entity("nl", "1")
    assert (entity["Name"], entity["Age"]) == ("Ada", 36)
