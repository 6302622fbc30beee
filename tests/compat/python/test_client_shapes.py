"""What real clients send and Azure accepts (issues 20 and 22).

Booleans sent as annotated strings: the Azure CLI (through this SDK) and Storage
Explorer send ``"Ok":"true","Ok@odata.type":"Edm.Boolean"``; Azure stores a boolean
and takes the text in any letter case. ``EntityProperty("TRUE", EdmType.BOOLEAN)``
makes the SDK send exactly that.
"""

from __future__ import annotations

import uuid

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import EdmType, EntityProperty, TableCorsRule, UpdateMode

from support import error_code_of


def _typed(pk: str, rk: str, text: str) -> dict:
    return {"PartitionKey": pk, "RowKey": rk, "Ok": EntityProperty(text, EdmType.BOOLEAN)}


def test_annotated_boolean_strings_are_stored_as_booleans(table):
    table.create_entity(_typed("p", "1", "true"))
    table.create_entity(_typed("p", "2", "FALSE"))
    table.upsert_entity(_typed("p", "3", "True"), mode=UpdateMode.REPLACE)
    table.upsert_entity(_typed("p", "4", "false"), mode=UpdateMode.MERGE)
    table.update_entity(_typed("p", "1", "fAlSe"), mode=UpdateMode.REPLACE, match_condition=MatchConditions.Unconditionally)
    table.update_entity(_typed("p", "2", "TRUE"), mode=UpdateMode.MERGE, match_condition=MatchConditions.Unconditionally)
    got = {e["RowKey"]: e["Ok"] for e in table.list_entities()}
    assert got == {"1": False, "2": True, "3": True, "4": False}
    assert all(type(v) is bool for v in got.values())
    assert sorted(e["RowKey"] for e in table.query_entities("Ok eq true")) == ["2", "3"]


@pytest.mark.batch
def test_annotated_boolean_strings_in_a_transaction(table):
    table.submit_transaction(
        [
            ("create", _typed("p", "a", "TRUE")),
            ("upsert", _typed("p", "b", "false"), {"mode": "replace"}),
            ("upsert", _typed("p", "c", "True"), {"mode": "merge"}),
        ]
    )
    got = {e["RowKey"]: e["Ok"] for e in table.list_entities()}
    assert got == {"a": True, "b": False, "c": True}


@pytest.mark.parametrize("text", ["yes", "1", ""])
def test_other_boolean_text_is_invalid_input(table, text):
    with pytest.raises(HttpResponseError) as info:
        table.create_entity(_typed("p", "x", text))
    assert info.value.status_code == 400
    assert error_code_of(info.value) == "InvalidInput"


@pytest.mark.query
def test_top_zero_is_an_empty_page(table, service):
    """Storage Explorer's "show top 0": Azure returns zero entities (Azurite #1428)."""
    for rk in ("a", "b"):
        table.create_entity({"PartitionKey": "0", "RowKey": rk})
    pages = list(table.query_entities("PartitionKey eq '0'", results_per_page=0).by_page())
    assert [list(p) for p in pages] == [[]]
    pages = list(table.list_entities(results_per_page=0).by_page())
    assert [list(p) for p in pages] == [[]]
    assert [list(p) for p in service.list_tables(results_per_page=0).by_page()] == [[]]


def test_weak_etag_that_does_not_match_is_412(table):
    """Azure answers 412 for any weak ETag that is not the current one (Azurite #1229)."""
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "v": 1})
    # (The SDK quotes any value that does not start with W/" or ", so the lower-case w/ form
    # is left to the wire tests.)
    for etag in ('W/"wrong"', 'W/"datetime\'notadate\'"'):
        with pytest.raises(ResourceModifiedError) as info:
            table.update_entity(
                {"PartitionKey": "p", "RowKey": "r", "v": 2},
                etag=etag,
                match_condition=MatchConditions.IfNotModified,
            )
        assert error_code_of(info.value) == "UpdateConditionNotSatisfied"
    assert table.get_entity("p", "r")["v"] == 1


def test_table_acl_on_a_missing_table_is_resource_not_found(service):
    missing = service.get_table_client("nosuchtable" + uuid.uuid4().hex[:8])
    with pytest.raises(ResourceNotFoundError) as info:
        missing.get_table_access_policy()
    assert info.value.error_code == "ResourceNotFound"
    with pytest.raises(ResourceNotFoundError) as info:
        missing.set_table_access_policy(signed_identifiers={})
    assert info.value.error_code == "ResourceNotFound"


def test_cors_header_lists_come_back_exact_names_first(service):
    rule = TableCorsRule(
        ["www.xyz.com", "www.ab.com", "www.bc.com"],
        ["GET", "PUT"],
        max_age_in_seconds=500,
        exposed_headers=["x-ms-meta-data*", "x-ms-meta-source*", "x-ms-meta-abc", "x-ms-meta-bcd"],
        allowed_headers=["x-ms-meta-data*", "x-ms-meta-target*", "x-ms-meta-xyz", "x-ms-meta-foo"],
    )
    try:
        service.set_service_properties(cors=[rule])
        got = service.get_service_properties()["cors"][0]
        assert got.allowed_origins == ["www.xyz.com", "www.ab.com", "www.bc.com"]
        assert got.allowed_methods == ["GET", "PUT"]
        assert got.exposed_headers == ["x-ms-meta-abc", "x-ms-meta-bcd", "x-ms-meta-data*", "x-ms-meta-source*"]
        assert got.allowed_headers == ["x-ms-meta-xyz", "x-ms-meta-foo", "x-ms-meta-data*", "x-ms-meta-target*"]
    finally:
        service.set_service_properties(cors=[])


def test_oversize_insert_raises_request_body_too_large(table):
    """An insert over 4 MiB: the SDK reads Azure's 413 instead of a broken pipe."""
    entity = {"PartitionKey": "p", "RowKey": "big"}
    for i in range(80):  # 80 x 64 KiB of text: over the 4 MiB request limit
        entity[f"s{i}"] = "x" * (32 * 1024 - 1)
        entity[f"t{i}"] = "y" * (32 * 1024 - 1)
    with pytest.raises(HttpResponseError) as info:
        table.create_entity(entity)
    assert info.value.status_code == 413
    assert error_code_of(info.value) == "RequestBodyTooLarge"
    assert list(table.list_entities()) == []


@pytest.mark.batch
def test_oversize_transaction_raises_request_body_too_large(table):
    big = "x" * (32 * 1024 - 1)
    ops = [("create", {"PartitionKey": "p", "RowKey": str(i), **{f"s{j}": big for j in range(30)}}) for i in range(6)]
    with pytest.raises(HttpResponseError) as info:
        table.submit_transaction(ops)
    assert info.value.status_code == 413
    assert error_code_of(info.value) == "RequestBodyTooLarge"
