"""Test state through azure-data-tables (issue 42, docs/test-isolation.md): reset, snapshots
and accounts on demand on a server of this module's own (the shared suite server is not
reset under the other tests), driven with the pytest plugin's Server methods."""

from __future__ import annotations

import pytest
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.data.tables import TableServiceClient

from conftest import CLIENT_KWARGS
from support import server_binary


@pytest.fixture(scope="module")
def own_server():
    """A server of this module's own, run from the binary under test by the plugin's Server
    (as realism_server does): the shared suite server is never reset under other tests."""
    from tablestore_server import Server

    with Server(binary=server_binary()) as server:
        yield server


def _service(connection_string: str) -> TableServiceClient:
    return TableServiceClient.from_connection_string(connection_string, **CLIENT_KWARGS)


def _tables(service: TableServiceClient) -> list:
    return sorted(t.name for t in service.list_tables())


def test_reset_empties_the_server(own_server):
    service = _service(own_server.connection_string)
    table = service.create_table("resetme")
    table.create_entity({"PartitionKey": "p", "RowKey": "1"})
    answer = own_server.reset()
    assert answer["scope"] == "server" and answer["tablesRemoved"] >= 1
    assert _tables(service) == []


def test_a_snapshot_block_restores_on_exit(own_server):
    own_server.reset()
    service = _service(own_server.connection_string)
    table = service.create_table("seeded")
    table.create_entity({"PartitionKey": "p", "RowKey": "kept", "n": 1})
    with own_server.snapshot("seeded"):
        table.create_entity({"PartitionKey": "p", "RowKey": "added"})
        table.update_entity({"PartitionKey": "p", "RowKey": "kept", "n": 2})
        service.create_table("scratch")
    assert _tables(service) == ["seeded"]
    rows = list(table.list_entities())
    assert [(e["RowKey"], e["n"]) for e in rows] == [("kept", 1)]
    assert "seeded" in [s["name"] for s in own_server.snapshots()]
    own_server.delete_snapshot("seeded")
    with pytest.raises(RuntimeError, match=r"404 There is no snapshot named"):
        own_server.restore_snapshot("seeded")
    with pytest.raises(RuntimeError, match=r"400 A snapshot name cannot hold path characters"):
        own_server.save_snapshot("..")


def test_accounts_on_demand_are_isolated_and_go_away(own_server):
    own_server.reset()
    one = own_server.create_account()
    two = own_server.create_account("workertwo")
    assert two.name == "workertwo"
    first, second = _service(one.connection_string), _service(two.connection_string)
    first.create_table("mine")
    assert _tables(first) == ["mine"]
    assert _tables(second) == []
    assert _tables(_service(own_server.connection_string)) == []
    one.reset()
    assert _tables(first) == []
    one.delete()
    with pytest.raises((ClientAuthenticationError, HttpResponseError)) as refused:
        first.create_table("again")
    assert refused.value.status_code == 403
    two.delete()
