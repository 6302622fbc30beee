"""azure-data-tables against ``tablestore --flavor cosmos`` (issue 32, docs/cosmos.md).

Each test starts its own Cosmos-flavoured server (``realism_server`` in realism.py starts the
binary under test with the options given) and reaches it through the Cosmos DB emulator's
connection string, unchanged but for the port: account ``localhost``, the emulator's key,
``TableEndpoint=http://localhost:<port>/``. The SDK takes ``localhost`` on a port other than
10002 for a Cosmos endpoint (``_is_cosmos_endpoint``), so it sends Merge as ``POST`` +
``X-HTTP-Method: MERGE``, which the server requires (it answers ``PATCH`` with 405).
"""

from __future__ import annotations

import re
import socket
import time

import pytest
from azure.core.exceptions import (
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
)
from azure.data.tables import TableServiceClient, TableTransactionError, UpdateMode

from conftest import unique_table_name
from realism import realism_server  # noqa: F401  (fixture)
from support import wire_error

COSMOS_EMULATOR_KEY = (
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
)
SEVEN_DIGITS = re.compile(r"datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d\.\d{7}Z'")


@pytest.fixture
def cosmos(realism_server):
    """A service client on a fresh ``--flavor cosmos`` server, from the emulator's string."""
    server = realism_server("--flavor", "cosmos")
    port = server.port
    expected = (
        "DefaultEndpointsProtocol=http;AccountName=localhost;"
        f"AccountKey={COSMOS_EMULATOR_KEY};TableEndpoint=http://localhost:{port}/;"
    )
    assert server.connection_string == expected
    assert server.account == "localhost"
    client = TableServiceClient.from_connection_string(expected, retry_total=0)
    assert client._cosmos_endpoint, "the SDK must take this endpoint for Cosmos"
    yield client
    client.close()


def test_tables_and_entities_through_the_cosmos_path(cosmos):
    name = unique_table_name("cosmos")
    table = cosmos.create_table(name)
    assert name in [t.name for t in cosmos.list_tables()]
    created = table.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
    assert SEVEN_DIGITS.search(created["etag"]), created
    # Merge goes out as POST + X-HTTP-Method: MERGE; the server refuses PATCH.
    table.update_entity({"PartitionKey": "p", "RowKey": "r", "m": 2}, mode=UpdateMode.MERGE)
    table.upsert_entity({"PartitionKey": "p", "RowKey": "u", "k": 3}, mode=UpdateMode.MERGE)
    got = table.get_entity("p", "r")
    assert (got["n"], got["m"]) == (1, 2)
    assert SEVEN_DIGITS.search(got.metadata["etag"]), got.metadata
    assert table.get_entity("p", "u")["k"] == 3
    table.delete_entity("p", "u")
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("p", "u")
    cosmos.delete_table(name)


def test_batches(cosmos):
    table = cosmos.create_table(unique_table_name("batch"))
    table.create_entity({"PartitionKey": "p", "RowKey": "m", "a": 1})
    table.create_entity({"PartitionKey": "p", "RowKey": "n", "a": 1})
    result = table.submit_transaction([
        ("create", {"PartitionKey": "p", "RowKey": "c"}),
        ("upsert", {"PartitionKey": "p", "RowKey": "m", "b": 2}, {"mode": UpdateMode.MERGE}),
        ("update", {"PartitionKey": "p", "RowKey": "n", "c": 3}, {"mode": UpdateMode.MERGE}),
    ])
    assert len(result) == 3
    etags = [r["etag"] for r in result]
    assert all(SEVEN_DIGITS.search(e) for e in etags), etags
    assert len(set(etags)) == 3, "each operation its own ETag"
    assert (table.get_entity("p", "m")["a"], table.get_entity("p", "m")["b"]) == (1, 2)
    assert (table.get_entity("p", "n")["a"], table.get_entity("p", "n")["c"]) == (1, 3)
    from azure.data.tables import TableTransactionError

    with pytest.raises(TableTransactionError) as failed:
        table.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "c"})])
    assert failed.value.error_code == "EntityAlreadyExists"


def test_queries_page_in_creation_order(cosmos):
    """Cosmos answers in creation order, not key order: an entity updated keeps its place, one
    deleted and created again moves to the end."""
    table = cosmos.create_table(unique_table_name("paging"))
    keys = [(pk, f"{rk:02}") for rk in reversed(range(12)) for pk in ("b", "a")]
    for pk, rk in keys:
        table.create_entity({"PartitionKey": pk, "RowKey": rk})
    pages = list(table.list_entities(results_per_page=5).by_page())
    assert len(pages) == 5
    seen = [(e["PartitionKey"], e["RowKey"]) for page in pages for e in page]
    assert seen == keys, "every entity once, in the order created"
    filtered = list(table.query_entities("PartitionKey eq 'b'", results_per_page=4))
    assert [(e["PartitionKey"], e["RowKey"]) for e in filtered] == keys[0::2]
    table.update_entity({"PartitionKey": "b", "RowKey": "11", "n": 1}, mode=UpdateMode.MERGE)
    table.upsert_entity({"PartitionKey": "a", "RowKey": "11", "n": 2}, mode=UpdateMode.REPLACE)
    table.delete_entity("b", "10")
    table.create_entity({"PartitionKey": "b", "RowKey": "10"})
    seen = [(e["PartitionKey"], e["RowKey"]) for e in table.list_entities()]
    assert seen == [k for k in keys if k != ("b", "10")] + [("b", "10")]


def test_a_shuffle_seed_answers_in_a_shuffle(realism_server):
    """``--cosmos-shuffle-seed`` answers in a fixed shuffle of the keys in place of creation
    order, to shake out code that assumes any order; every entity still comes once."""
    server = realism_server("--flavor", "cosmos", "--cosmos-shuffle-seed", "5")
    service = TableServiceClient.from_connection_string(server.connection_string, retry_total=0)
    table = service.create_table(unique_table_name("shuffled"))
    keys = [("p", f"{rk:02}") for rk in range(30)]
    table.submit_transaction([("create", {"PartitionKey": pk, "RowKey": rk}) for pk, rk in keys])
    seen = [(e["PartitionKey"], e["RowKey"]) for e in table.list_entities(results_per_page=7)]
    assert sorted(seen) == keys, "every entity exactly once"
    assert seen != keys, "neither key order nor creation order"
    service.close()


@pytest.mark.parametrize("seed", ["0", "4"])
def test_sdk_iterators_page_through_cut_cosmos_pages(realism_server, seed):
    """``--page-breaks random`` cuts Cosmos-flavoured pages short, to nothing included (a first
    page cut to nothing carries a token back to the start); the SDK's iterators still see each
    entity exactly once."""
    server = realism_server(
        "--flavor", "cosmos", "--page-breaks", "random", "--realism-seed", seed
    )
    service = TableServiceClient.from_connection_string(
        server.connection_string, retry_total=0
    )
    table = service.create_table(unique_table_name("cut"))
    keys = [("p", f"{rk:02}") for rk in range(30)]
    table.submit_transaction([("create", {"PartitionKey": pk, "RowKey": rk}) for pk, rk in keys])
    pages = list(table.list_entities(results_per_page=6).by_page())
    sizes = [len(list(page)) for page in pages]
    assert any(size < 6 for size in sizes[:-1]), sizes
    assert sizes[0] == 0, f"these seeds cut the first page to nothing: {sizes}"
    seen = sorted(
        (e["PartitionKey"], e["RowKey"])
        for e in table.query_entities("PartitionKey eq 'p'", results_per_page=4)
    )
    assert seen == keys
    assert sorted((e["PartitionKey"], e["RowKey"]) for e in table.list_entities()) == keys
    service.close()


def test_errors(cosmos):
    name = unique_table_name("errors")
    table = cosmos.create_table(name)
    with pytest.raises(ResourceExistsError):
        cosmos.create_table(name)
    with pytest.raises(HttpResponseError) as empty:
        table.create_entity({"PartitionKey": "", "RowKey": "r"})
    assert empty.value.status_code == 400
    assert "PropertiesNeedValue" in str(empty.value)
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("p", "missing")
    with pytest.raises(HttpResponseError) as unsupported:
        cosmos.get_service_properties()
    assert unsupported.value.status_code == 501


def test_request_units_throttle_with_cosmos_429(realism_server):
    """Under ``--simulate-targets`` a Cosmos-flavoured table has a budget of request units
    (here 2 RU/s: one small insert costs 5.6 RU and leaves the bucket 3.6 RU in debt, so the
    next one waits 2.8 s, a wide window on a busy machine). The SDK, with retries off, sees the
    second insert refused with Cosmos's 429 ``TooManyRequests``; that insert wrote nothing, and
    once the budget has refilled it goes through."""
    server = realism_server(
        "--flavor", "cosmos", "--simulate-targets", "--cosmos-table-rus", "2"
    )
    service = TableServiceClient.from_connection_string(
        server.connection_string, retry_total=0
    )
    assert service._cosmos_endpoint
    table = service.create_table(unique_table_name("rus"))
    table.create_entity({"PartitionKey": "p", "RowKey": "a", "n": 1})
    with pytest.raises(HttpResponseError) as throttled:
        table.create_entity({"PartitionKey": "p", "RowKey": "b", "n": 2})
    status, code, message = wire_error(throttled.value)
    assert (status, code) == (429, "TooManyRequests"), throttled.value
    assert "Request rate is large" in message
    assert "SubStatusCode: 3200" in message
    # The SDK names the code in what it raises (it is not one of its TableErrorCode values).
    assert "TooManyRequests" in str(throttled.value), str(throttled.value)
    time.sleep(3)  # the debt paid, a read (1 RU) fits
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("p", "b")
    time.sleep(1.2)  # a full bucket again, as an insert needs
    table.create_entity({"PartitionKey": "p", "RowKey": "b", "n": 2})
    time.sleep(2.5)  # 3.6 RU of debt again; a read needs 1
    assert table.get_entity("p", "b")["n"] == 2
    service.close()


def test_table_names_are_case_sensitive(cosmos):
    # Cosmos tells table names apart by case (API for Table FAQ); Table storage does not.
    upper, lower = unique_table_name("Case"), None
    lower = upper.lower()
    for name in (upper, lower):
        table = cosmos.create_table(name)
        table.create_entity({"PartitionKey": "p", "RowKey": "r", "table": name})
    with pytest.raises(ResourceExistsError):
        cosmos.create_table(upper)
    for name in (upper, lower):
        assert cosmos.get_table_client(name).get_entity("p", "r")["table"] == name
    listed = [t.name for t in cosmos.query_tables(f"TableName eq '{upper}'")]
    assert listed == [upper]
    names = {t.name for t in cosmos.list_tables()}
    assert {upper, lower} <= names
    cosmos.delete_table(upper)
    assert cosmos.get_table_client(lower).get_entity("p", "r")["table"] == lower
    cosmos.delete_table(lower)


def test_cosmos_only_table_names(cosmos):
    # Names Table storage refuses: spaces, hyphens, dots, any Unicode (1-254 characters).
    for name in (unique_table_name("my table") + " x", "ünïcode-名前." + unique_table_name("n")):
        table = cosmos.create_table(name)
        assert name in [t.name for t in cosmos.list_tables()]
        table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
        assert table.get_entity("p", "r")["v"] == 1
        assert [e["v"] for e in table.list_entities()] == [1]
        table.submit_transaction([("upsert", {"PartitionKey": "p", "RowKey": "s"})])
        cosmos.delete_table(name)
    # A name Cosmos refuses: the SDK recognises the server's answer and raises its ValueError.
    for bad in ("a#b", "ends with space ", "-" * 255):
        with pytest.raises(ValueError) as refused:
            cosmos.create_table(bad)
        assert "Cosmos table names must contain from 1-255 characters" in str(refused.value)


# ---------------------------------------------------------------------------
# Other host names (docs/cosmos.md, "Other host names"): the SDK decides an endpoint is
# Cosmos from its host name alone (`_is_cosmos_endpoint`: a `.table.cosmos.` or
# `.table.cosmosdb.` name, or `localhost` on a port other than 10002). In Compose or CI the
# server has a service name, so the SDK sends Merge as PATCH, which Cosmos refuses (405).
# The recipe: reach the server under a name with `.table.cosmos.` in it (a network alias).
# These tests give the names to this process's resolver only, as Docker's DNS gives a
# network alias to the containers of its network: the SDK, its HTTP stack and the server
# see the name in the URL, the Host header and the signature.
# ---------------------------------------------------------------------------

COSMOS_ALIAS = "tablestore.table.cosmos.test"
SERVICE_NAME = "tablestore"


@pytest.fixture
def names_resolve_to_loopback(monkeypatch):
    """``COSMOS_ALIAS`` and ``SERVICE_NAME`` resolve to 127.0.0.1 in this process."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and host.lower() in (COSMOS_ALIAS, SERVICE_NAME):
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _emulator_string(host: str, port: int) -> str:
    return (
        "DefaultEndpointsProtocol=http;AccountName=localhost;"
        f"AccountKey={COSMOS_EMULATOR_KEY};TableEndpoint=http://{host}:{port}/;"
    )


def test_a_cosmos_alias_makes_the_sdk_speak_cosmos(realism_server, names_resolve_to_loopback):
    server = realism_server("--flavor", "cosmos")
    conn = _emulator_string(COSMOS_ALIAS, server.port)
    with TableServiceClient.from_connection_string(conn, retry_total=0) as client:
        assert client._cosmos_endpoint, "a .table.cosmos. name is a Cosmos endpoint to the SDK"
        name = unique_table_name("alias")
        table = client.create_table(name)
        table.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
        # Merge reaches the server as POST + X-HTTP-Method: MERGE (PATCH would be a 405).
        table.update_entity({"PartitionKey": "p", "RowKey": "r", "m": 2}, mode=UpdateMode.MERGE)
        table.submit_transaction([
            ("upsert", {"PartitionKey": "p", "RowKey": "r", "k": 3}, {"mode": UpdateMode.MERGE}),
        ])
        got = table.get_entity("p", "r")
        assert (got["n"], got["m"], got["k"]) == (1, 2, 3)
        assert name in [t.name for t in client.list_tables()]
        client.delete_table(name)


def test_a_service_name_gets_405_and_the_log_says_why(realism_server, names_resolve_to_loopback):
    server = realism_server("--flavor", "cosmos", "--log-level", "info")
    conn = _emulator_string(SERVICE_NAME, server.port)
    with TableServiceClient.from_connection_string(conn, retry_total=0) as client:
        assert not client._cosmos_endpoint, "a bare service name is Table storage to the SDK"
        table = client.create_table(unique_table_name("svc"))
        table.create_entity({"PartitionKey": "p", "RowKey": "r"})
        with pytest.raises(HttpResponseError) as caught:
            table.update_entity({"PartitionKey": "p", "RowKey": "r", "m": 2}, mode=UpdateMode.MERGE)
        assert caught.value.status_code == 405
        assert caught.value.error_code == "MethodNotAllowed"
    deadline = time.monotonic() + 10
    while "refuses PATCH" not in server.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    line = next(
        (l for l in server.log().splitlines() if "status=405" in l), None
    )
    assert line is not None, server.log()
    assert "refuses PATCH" in line and "took this endpoint for Azure Table storage" in line, line


def test_a_table_name_in_the_service_url_gets_the_sdks_hint(realism_server):
    """``TableEndpoint=http://localhost:<port>/<table>``: Cosmos answers 400 InvalidInput
    "Request url is invalid.", which the SDK explains as a wrong account URL."""
    server = realism_server("--flavor", "cosmos")
    name = unique_table_name("inurl")
    good = TableServiceClient.from_connection_string(
        _emulator_string("localhost", server.port), retry_total=0
    )
    good.create_table(name)
    bad_conn = _emulator_string("localhost", server.port).replace(
        f":{server.port}/;", f":{server.port}/{name};"
    )
    with TableServiceClient.from_connection_string(bad_conn, retry_total=0) as bad:
        for call in (lambda: bad.create_table(name), lambda: bad.delete_table(name)):
            with pytest.raises(HttpResponseError) as caught:
                call()
            assert caught.value.status_code == 400
            assert caught.value.error_code == "InvalidInput"
            assert "Request url is invalid" in str(caught.value)
            assert "Please check your account URL." in str(caught.value)
    assert name in [t.name for t in good.list_tables()]
    good.delete_table(name)
    good.close()


def test_a_change_set_naming_a_row_twice_fails_whole(cosmos):
    """Cosmos refuses such a batch with a 400 of the whole request, which the SDK raises as
    the error itself, not as a TableTransactionError naming an operation (Storage's 202)."""
    table = cosmos.create_table(unique_table_name("dups"))
    with pytest.raises(HttpResponseError) as caught:
        table.submit_transaction([
            ("create", {"PartitionKey": "p", "RowKey": "a"}),
            ("create", {"PartitionKey": "p", "RowKey": "b"}),
            ("upsert", {"PartitionKey": "p", "RowKey": "a", "x": 1}),
        ])
    assert not isinstance(caught.value, TableTransactionError), caught.value
    assert caught.value.status_code == 400
    assert caught.value.error_code == "InvalidDuplicateRow"
    assert "2:The batch request contains multiple changes with same row key." in str(caught.value)
    assert list(table.list_entities()) == []


def test_a_full_table_page_is_followed_by_an_empty_one(cosmos):
    """Cosmos sends a continuation after every full page of Query Tables, so the SDK's last
    page is empty (Storage's would end with the range)."""
    prefix = unique_table_name("zzp")[:20]
    names = [f"{prefix}{i}" for i in range(4)]
    for name in names:
        cosmos.create_table(name)
    after = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    query = f"TableName ge '{prefix}' and TableName lt '{after}'"
    pages = [list(p) for p in cosmos.query_tables(query, results_per_page=2).by_page()]
    assert [len(p) for p in pages] == [2, 2, 0]
    assert sorted(t.name for p in pages for t in p) == names
    for name in names:
        cosmos.delete_table(name)
