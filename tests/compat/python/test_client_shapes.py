"""Request shapes that real clients send and Azure accepts (issue 22).

Booleans sent as annotated strings: the Azure CLI (through this SDK) and Storage
Explorer send ``"Ok":"true","Ok@odata.type":"Edm.Boolean"``; Azure stores a boolean
and takes the text in any letter case. ``EntityProperty("TRUE", EdmType.BOOLEAN)``
makes the SDK send exactly that.
"""

from __future__ import annotations

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError
from azure.data.tables import EdmType, EntityProperty, UpdateMode

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
