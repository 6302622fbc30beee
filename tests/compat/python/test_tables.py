"""Tables: create, delete, list, query (Azure docs: "Query Tables", "Create Table", "Delete Table", "Understanding the Table service data model")."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.data.tables import TableAccessPolicy

from conftest import unique_table_name
from support import ResponseCapture, error_code_of, wire_error


def _names(items):
    return [t.name for t in items]


def test_create_table_then_use_it(service, make_table):
    name = unique_table_name("Create")
    client = make_table(name)
    assert client.table_name == name
    # The table is usable at once.
    client.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
    assert client.get_entity("p", "r")["v"] == 1
    assert name in _names(service.list_tables())


def test_create_table_from_table_client(service):
    name = unique_table_name("FromClient")
    client = service.get_table_client(name)
    try:
        item = client.create_table()
        assert item.name == name
        assert name in _names(service.list_tables())
    finally:
        service.delete_table(name)


def test_create_duplicate_table_raises_resource_exists(service, make_table):
    name = unique_table_name("Dup")
    make_table(name)
    with pytest.raises(ResourceExistsError) as info:
        service.create_table(name)
    assert error_code_of(info.value) == "TableAlreadyExists"
    assert info.value.status_code == 409


def test_create_table_case_insensitive_collision(service, make_table):
    name = unique_table_name("CaseCollide")
    make_table(name)
    for variant in (name.upper(), name.lower(), name.swapcase()):
        with pytest.raises(ResourceExistsError) as info:
            service.create_table(variant)
        assert error_code_of(info.value) == "TableAlreadyExists"
    # Only the original casing is listed.
    matching = [n for n in _names(service.list_tables()) if n.lower() == name.lower()]
    assert matching == [name]


def test_table_names_resolve_case_insensitively(service, make_table):
    name = unique_table_name("MixedCase")
    make_table(name)
    other = service.get_table_client(name.upper())
    other.create_entity({"PartitionKey": "p", "RowKey": "r"})
    assert service.get_table_client(name).get_entity("p", "r")["RowKey"] == "r"


@pytest.mark.parametrize(
    "bad_name, sdk_error",
    [
        # Against Azure the SDK recognises the InvalidResourceName message and,
        # when the name also fails its own regex, re-raises it as ValueError
        # with the HTTP error as context.
        ("my_table", ValueError),  # '_' is not alphanumeric (recorded against Azure)
        ("\u554a\u9f44\u4e02\u72db\u72dc", ValueError),  # CJK characters (recorded against Azure)
        ("tbl-with-dash", ValueError),
        ("1startswithdigit", ValueError),
        # Reserved (Azure docs: "Understanding the Table service data model"): passes the SDK's regex, so the HTTP error surfaces.
        ("tables", HttpResponseError),
    ],
)
def test_create_table_invalid_name(service, bad_name, sdk_error):
    with pytest.raises((ValueError, HttpResponseError)) as info:
        service.create_table(bad_name)
    status, code, _ = wire_error(info.value)
    assert (status, code) == (400, "InvalidResourceName")
    assert isinstance(info.value, sdk_error), f"got {type(info.value).__name__}: {info.value}"


@pytest.mark.parametrize("length", [2, 64])
def test_create_table_name_length_out_of_range(service, length):
    bad_name = ("t" + uuid.uuid4().hex * 4)[:length]
    with pytest.raises((ValueError, HttpResponseError)) as info:
        service.create_table(bad_name)
    status, code, _ = wire_error(info.value)
    assert (status, code) == (400, "OutOfRangeInput")
    assert isinstance(info.value, ValueError), (
        "the SDK turns Azure's OutOfRangeInput name-length message into ValueError; "
        f"got {type(info.value).__name__}: {info.value}"
    )


@pytest.mark.parametrize("length", [3, 63])
def test_create_table_name_length_limits_accepted(service, make_table, length):
    name = ("t" + uuid.uuid4().hex * 4)[:length]
    client = make_table(name)
    client.create_entity({"PartitionKey": "a", "RowKey": "b"})
    assert name in _names(service.list_tables())


def test_create_table_if_not_exists(service):
    name = unique_table_name("IfNotExists")
    try:
        first = service.create_table_if_not_exists(name)
        first.create_entity({"PartitionKey": "p", "RowKey": "r", "kept": "yes"})
        second = service.create_table_if_not_exists(name)
        assert second.table_name == name
        # The existing table (and its data) is kept.
        assert second.get_entity("p", "r")["kept"] == "yes"
        assert _names(service.list_tables()).count(name) == 1
    finally:
        service.delete_table(name)


def test_delete_table_removes_it_and_its_entities(service):
    name = unique_table_name("Delete")
    client = service.create_table(name)
    client.create_entity({"PartitionKey": "p", "RowKey": "r"})
    service.delete_table(name)
    assert name not in _names(service.list_tables())
    with pytest.raises(ResourceNotFoundError) as info:
        client.get_entity("p", "r")
    assert error_code_of(info.value) == "TableNotFound"
    # A table of the same name starts empty.
    again = service.create_table(name)
    try:
        assert list(again.list_entities()) == []
    finally:
        service.delete_table(name)


def test_delete_missing_table_is_404_resource_not_found(service):
    # The SDK swallows the 404 of delete_table by design; check the wire answer.
    capture = ResponseCapture()
    service.delete_table(unique_table_name("NeverCreated"), **capture.kwargs)
    status, code, _ = capture.last_error()
    assert (status, code) == (404, "ResourceNotFound")


def test_entity_operations_on_missing_table_raise_table_not_found(service):
    client = service.get_table_client(unique_table_name("Missing"))
    with pytest.raises(ResourceNotFoundError) as info:
        client.create_entity({"PartitionKey": "p", "RowKey": "r"})
    assert error_code_of(info.value) == "TableNotFound"
    with pytest.raises(ResourceNotFoundError) as info:
        list(client.list_entities())
    assert error_code_of(info.value) == "TableNotFound"


def test_list_tables_preserves_case_and_orders_by_lowercased_name(service, make_table):
    prefix = "ls" + uuid.uuid4().hex[:10]
    # Ordinal (case-sensitive) order would be B, C, a; Azure orders by the
    # lower-cased name: a, B, C.
    names = [f"{prefix}B1", f"{prefix}a2", f"{prefix}C3"]
    for name in names:
        make_table(name)
    listed = [n for n in _names(service.list_tables()) if n.lower().startswith(prefix)]
    assert listed == [f"{prefix}a2", f"{prefix}B1", f"{prefix}C3"]


def test_list_tables_global_order_is_case_insensitive(service, make_table):
    make_table(unique_table_name("Zorder"))
    make_table(unique_table_name("aorder"))
    listed = _names(service.list_tables())
    lowered = [n.lower() for n in listed]
    assert lowered == sorted(lowered)
    assert len(set(lowered)) == len(lowered)


def test_list_tables_paging_with_results_per_page(service, make_table):
    prefix = "pg" + uuid.uuid4().hex[:10]
    mine = [f"{prefix}{i:02d}" for i in range(7)]
    for name in mine:
        make_table(name)

    pager = service.list_tables(results_per_page=3).by_page()
    pages = []
    for page in pager:
        names = _names(page)
        assert len(names) <= 3
        pages.append(names)
        if len(pages) > 10_000:
            pytest.fail("paging does not terminate")
    seen = [n for page in pages for n in page]
    assert [n for n in seen if n.startswith(prefix)] == mine
    assert len(seen) == len(set(n.lower() for n in seen)), "a table was listed twice"
    assert len(pages) >= 3


def test_list_tables_by_page_continuation_token(service, make_table):
    prefix = "ct" + uuid.uuid4().hex[:10]
    for i in range(4):
        make_table(f"{prefix}{i}")
    pages = service.list_tables(results_per_page=2).by_page()
    first = list(next(pages))
    assert len(first) == 2
    token = pages.continuation_token
    assert token, "a full page must carry a continuation token"
    # Resume from the token with a fresh pager.
    rest = service.list_tables(results_per_page=2).by_page(continuation_token=token)
    resumed = [n for page in rest for n in _names(page)]
    assert not set(_names(first)) & set(resumed), "resuming repeated a table"
    combined = _names(first) + resumed
    assert [n for n in combined if n.startswith(prefix)] == [f"{prefix}{i}" for i in range(4)]
    lowered = [n.lower() for n in combined]
    assert lowered == sorted(lowered)


@pytest.mark.query
def test_query_tables_with_filter(service, make_table):
    name = unique_table_name("QueryMe")
    make_table(name)
    make_table(unique_table_name("Other"))
    found = _names(service.query_tables("TableName eq @n", parameters={"n": name}))
    assert found == [name]


@pytest.mark.query
def test_query_tables_prefix_range(service, make_table):
    prefix = "qr" + uuid.uuid4().hex[:10]
    mine = [f"{prefix}{c}" for c in "abc"]
    for name in mine:
        make_table(name)
    found = _names(
        service.query_tables(
            "TableName ge @lo and TableName lt @hi",
            parameters={"lo": prefix, "hi": prefix + "{"},
        )
    )
    assert found == mine


# ---------------------------------------------------------------------------
# Stored access policies (Azure docs: "Get Table ACL", "Set Table ACL")
# ---------------------------------------------------------------------------


def test_table_access_policy_round_trip(table):
    start = datetime(2021, 7, 8, 9, 10, 9, tzinfo=timezone.utc)
    expiry = datetime(2031, 7, 8, 9, 10, 9, tzinfo=timezone.utc)
    table.set_table_access_policy(
        {
            "full": TableAccessPolicy(start=start, expiry=expiry, permission="raud"),
            "permonly": TableAccessPolicy(permission="r"),
            "empty": None,
        }
    )
    got = table.get_table_access_policy()
    assert set(got) == {"full", "permonly", "empty"}
    assert got["full"].permission == "raud"
    assert got["full"].start == start and got["full"].expiry == expiry
    assert got["permonly"].permission == "r"
    assert got["permonly"].start is None and got["permonly"].expiry is None
    assert got["empty"] is None


def test_table_access_policy_replace_and_clear(table):
    table.set_table_access_policy({"a": TableAccessPolicy(permission="r"), "b": TableAccessPolicy(permission="a")})
    table.set_table_access_policy({"c": TableAccessPolicy(permission="u")})
    assert set(table.get_table_access_policy()) == {"c"}
    table.set_table_access_policy({})
    assert table.get_table_access_policy() == {}


def test_table_access_policy_at_most_five(table):
    five = {f"id{i}": TableAccessPolicy(permission="r") for i in range(5)}
    table.set_table_access_policy(five)
    assert set(table.get_table_access_policy()) == set(five)
    six = {f"id{i}": TableAccessPolicy(permission="r") for i in range(6)}
    # The SDK turns Azure's 400 InvalidXmlDocument into ValueError.
    with pytest.raises((ValueError, HttpResponseError)) as info:
        table.set_table_access_policy(six)
    assert wire_error(info.value)[:2] == (400, "InvalidXmlDocument")
    assert isinstance(info.value, ValueError)
    assert set(table.get_table_access_policy()) == set(five)


def test_a_table_name_in_the_service_url_gets_the_sdks_hint(service):
    """``TableEndpoint=…/devstoreaccount1/<table>``, a common slip: the SDK then sends
    ``POST …/<table>/Tables`` and the like, and tablestore answers as Azure does (recorded by
    the SDK's own suite), which the SDK turns into its hint to check the account URL."""
    from azure.data.tables import TableServiceClient

    from conftest import ACCOUNT_KEY, ACCOUNT_NAME, CLIENT_KWARGS, endpoint

    name = unique_table_name("inurl")
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};"
        f"TableEndpoint={endpoint()}/{ACCOUNT_NAME}/{name};"
    )
    hint = "Please check your account URL."
    with TableServiceClient.from_connection_string(conn, **CLIENT_KWARGS) as bad:
        with pytest.raises(ResourceNotFoundError) as caught:
            bad.create_table(name)
        assert "The table specified does not exist" in str(caught.value)
        assert hint in str(caught.value)
        service.create_table(name)
        try:
            with pytest.raises(HttpResponseError) as caught:
                bad.create_table(name)
            assert caught.value.error_code == "PropertiesNeedValue"
            assert "values are not specified" in str(caught.value) and hint in str(caught.value)
            with pytest.raises(HttpResponseError) as caught:
                bad.delete_table(name)
            assert caught.value.error_code == "InvalidInput"
            assert "URI does not match number of key properties for the resource" in str(
                caught.value
            )
            assert hint in str(caught.value)
            with pytest.raises(HttpResponseError) as caught:
                list(bad.list_tables())
            assert caught.value.status_code == 501
            # Nothing ran: the table is still there.
            assert [t.name for t in service.query_tables(f"TableName eq '{name}'")] == [name]
        finally:
            service.delete_table(name)


def test_the_page_that_ends_a_name_range_is_the_last(service):
    """Query Tables with a ``TableName`` range and ``results_per_page``: the page that ends the
    range carries no continuation, so the SDK makes no extra, empty request (Azure's answer,
    recorded by the Go SDK's suite; Cosmos answers differently, test_cosmos.py)."""
    prefix = unique_table_name("zzr") + "a"
    names = [f"{prefix}{i}" for i in range(4)]
    after = prefix[:-1] + "b"
    for name in names:
        service.create_table(name)
    outside = f"{after}x"
    service.create_table(outside)
    try:
        query = f"TableName ge '{prefix}' and TableName lt '{after}'"
        pages = [list(p) for p in service.query_tables(query, results_per_page=2).by_page()]
        assert [[t.name for t in p] for p in pages] == [names[:2], names[2:]]
    finally:
        for name in [*names, outside]:
            service.delete_table(name)
