"""The legacy Python SDK, azure-cosmosdb-table 1.0.6, against the server.

It is no longer developed, but many scripts still use it. It speaks an older API version
(2017-04-17), asks for `application/json;odata=minimalmetadata`, signs with Shared Key, pages
with `NextPartitionKey`/`NextRowKey` markers and sends batches as multipart MIME of its own.
"""

from __future__ import annotations

import pytest
from azure.common import AzureConflictHttpError, AzureHttpError, AzureMissingResourceHttpError
from azure.cosmosdb.table.common.retry import no_retry
from azure.cosmosdb.table.models import EdmType, EntityProperty
from azure.cosmosdb.table.tablebatch import TableBatch
from azure.cosmosdb.table.tableservice import TableService

from conftest import connection_string, unique_table_name


@pytest.fixture
def legacy():
    service = TableService(connection_string=connection_string())
    service.retry = no_retry
    name = unique_table_name("legacypy")
    assert service.create_table(name, fail_on_exist=True) is True
    yield service, name
    service.delete_table(name)


def test_legacy_tables(legacy):
    service, name = legacy
    assert service.create_table(name) is False  # already there, not raised
    with pytest.raises(AzureConflictHttpError):
        service.create_table(name, fail_on_exist=True)
    assert service.exists(name) is True
    assert name in [t.name for t in service.list_tables()]
    assert service.exists(unique_table_name("missing")) is False


def test_legacy_entities_and_etags(legacy):
    service, name = legacy
    etag = service.insert_entity(
        name,
        {
            "PartitionKey": "p",
            "RowKey": "r",
            "Name": "Ada",
            "Big": EntityProperty(EdmType.INT64, 2**40),
            "Ok": True,
            "Score": 1.5,
        },
    )
    with pytest.raises(AzureConflictHttpError):
        service.insert_entity(name, {"PartitionKey": "p", "RowKey": "r"})
    got = service.get_entity(name, "p", "r")
    assert (got.Name, got.Big, got.Ok, got.Score) == ("Ada", 2**40, True, 1.5)
    assert got.etag == etag

    new_etag = service.update_entity(name, {"PartitionKey": "p", "RowKey": "r", "Name": "Bea"}, if_match=etag)
    assert new_etag != etag
    with pytest.raises(AzureHttpError) as stale:
        service.merge_entity(name, {"PartitionKey": "p", "RowKey": "r", "Name": "Cy"}, if_match=etag)
    assert stale.value.status_code == 412
    got = service.get_entity(name, "p", "r")
    assert got.Name == "Bea" and "Big" not in got

    service.insert_or_merge_entity(name, {"PartitionKey": "p", "RowKey": "r", "Extra": 7})
    got = service.get_entity(name, "p", "r")
    assert (got.Name, got.Extra) == ("Bea", 7)
    service.insert_or_replace_entity(name, {"PartitionKey": "p", "RowKey": "r", "Only": "x"})
    got = service.get_entity(name, "p", "r")
    assert "Name" not in got and got.Only == "x"

    with pytest.raises(AzureHttpError) as stale_delete:
        service.delete_entity(name, "p", "r", if_match=etag)
    assert stale_delete.value.status_code == 412
    service.delete_entity(name, "p", "r")
    with pytest.raises(AzureMissingResourceHttpError):
        service.get_entity(name, "p", "r")


def test_legacy_paged_and_filtered_queries(legacy):
    service, name = legacy
    for i in range(7):
        service.insert_entity(name, {"PartitionKey": "p", "RowKey": f"{i:02d}", "n": i})

    page = service.query_entities(name, num_results=3)
    first = [e.RowKey for e in page]
    assert first == ["00", "01", "02"]
    assert page.next_marker  # NextPartitionKey / NextRowKey
    page2 = service.query_entities(name, num_results=3, marker=page.next_marker)
    assert [e.RowKey for e in page2] == ["03", "04", "05"]

    # The generator without num_results follows the continuation itself.
    assert [e.n for e in service.query_entities(name)] == list(range(7))
    # This SDK stores every Python int as Edm.Int64, and a comparison only matches values of
    # the literal's type: an Int32 literal finds nothing, the `L` suffix finds the rows.
    assert list(service.query_entities(name, filter="n ge 4")) == []
    hits = service.query_entities(name, filter="n ge 4L and RowKey ne '05'", select="n")
    got = list(hits)
    assert [e.n for e in got] == [4, 6]
    assert all("RowKey" not in e for e in got)


def test_legacy_batch_commits_and_rolls_back(legacy):
    service, name = legacy
    service.insert_entity(name, {"PartitionKey": "p", "RowKey": "gone"})
    batch = TableBatch()
    batch.insert_entity({"PartitionKey": "p", "RowKey": "a", "v": 1})
    batch.insert_or_replace_entity({"PartitionKey": "p", "RowKey": "b", "v": 2})
    batch.delete_entity("p", "gone")
    etags = service.commit_batch(name, batch)
    assert len(etags) == 3
    assert sorted(e.RowKey for e in service.query_entities(name)) == ["a", "b"]

    failing = TableBatch()
    failing.insert_entity({"PartitionKey": "p", "RowKey": "c"})
    failing.insert_entity({"PartitionKey": "p", "RowKey": "a"})
    with pytest.raises(AzureHttpError):
        service.commit_batch(name, failing)
    assert sorted(e.RowKey for e in service.query_entities(name)) == ["a", "b"]
