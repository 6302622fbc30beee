"""Entity group transactions via submit_transaction (Azure docs: "Performing entity group transactions")."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import ResourceNotFoundError
from azure.data.tables import EdmType, EntityProperty, TableTransactionError, UpdateMode

from conftest import unique_table_name
from support import custom_properties, error_code_of

pytestmark = pytest.mark.batch


def _exists(table, pk, rk):
    try:
        table.get_entity(pk, rk)
        return True
    except ResourceNotFoundError:
        return False


def test_batch_single_create(table):
    result = table.submit_transaction([("create", {"PartitionKey": "pk", "RowKey": "rk", "v": 1})])
    assert len(result) == 1
    got = table.get_entity("pk", "rk")
    assert got["v"] == 1
    assert result[0]["etag"] == got.metadata["etag"]


def test_batch_100_creates(table):
    ops = [("create", {"PartitionKey": "pk", "RowKey": f"{i:03d}", "i": i}) for i in range(100)]
    result = table.submit_transaction(ops)
    assert len(result) == 100
    stored = list(table.list_entities())
    assert [(e["RowKey"], e["i"]) for e in stored] == [(f"{i:03d}", i) for i in range(100)]
    etags = {e["RowKey"]: e.metadata["etag"] for e in stored}
    for i, meta in enumerate(result):
        assert meta["etag"] == etags[f"{i:03d}"]


def test_batch_every_operation_kind(table):
    pk = "pk"
    for rk in ("upd-r", "upd-m", "ups-r", "ups-m", "del", "del-etag"):
        table.create_entity({"PartitionKey": pk, "RowKey": rk, "old": 1, "keep": "k"})
    etag_for_delete = table.get_entity(pk, "del-etag").metadata["etag"]

    ops = [
        ("create", {"PartitionKey": pk, "RowKey": "new", "v": "created"}),
        ("update", {"PartitionKey": pk, "RowKey": "upd-r", "v": "replaced"}, {"mode": UpdateMode.REPLACE}),
        ("update", {"PartitionKey": pk, "RowKey": "upd-m", "v": "merged"}, {"mode": UpdateMode.MERGE}),
        ("upsert", {"PartitionKey": pk, "RowKey": "ups-r", "v": "replaced"}, {"mode": UpdateMode.REPLACE}),
        ("upsert", {"PartitionKey": pk, "RowKey": "ups-m", "v": "merged"}, {"mode": UpdateMode.MERGE}),
        ("upsert", {"PartitionKey": pk, "RowKey": "ups-new-r", "v": "inserted"}, {"mode": UpdateMode.REPLACE}),
        ("upsert", {"PartitionKey": pk, "RowKey": "ups-new-m", "v": "inserted"}, {"mode": UpdateMode.MERGE}),
        ("delete", {"PartitionKey": pk, "RowKey": "del"}),
        (
            "delete",
            {"PartitionKey": pk, "RowKey": "del-etag"},
            {"etag": etag_for_delete, "match_condition": MatchConditions.IfNotModified},
        ),
    ]
    result = table.submit_transaction(ops)
    assert len(result) == len(ops)

    assert custom_properties(table.get_entity(pk, "new")) == {"v": "created"}
    assert custom_properties(table.get_entity(pk, "upd-r")) == {"v": "replaced"}
    assert custom_properties(table.get_entity(pk, "upd-m")) == {"old": 1, "keep": "k", "v": "merged"}
    assert custom_properties(table.get_entity(pk, "ups-r")) == {"v": "replaced"}
    assert custom_properties(table.get_entity(pk, "ups-m")) == {"old": 1, "keep": "k", "v": "merged"}
    assert custom_properties(table.get_entity(pk, "ups-new-r")) == {"v": "inserted"}
    assert custom_properties(table.get_entity(pk, "ups-new-m")) == {"v": "inserted"}
    assert not _exists(table, pk, "del")
    assert not _exists(table, pk, "del-etag")
    # Every write reports the new ETag of its entity; deletes report none.
    for (kind, entity, *_), meta in zip(ops, result):
        if kind == "delete":
            continue
        assert meta["etag"] == table.get_entity(pk, entity["RowKey"]).metadata["etag"], entity["RowKey"]


def test_batch_update_with_matching_etag(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    current = table.get_entity("pk", "rk")
    current["v"] = 2
    table.submit_transaction(
        [
            (
                "update",
                current,
                {
                    "mode": UpdateMode.REPLACE,
                    "etag": current.metadata["etag"],
                    "match_condition": MatchConditions.IfNotModified,
                },
            )
        ]
    )
    assert table.get_entity("pk", "rk")["v"] == 2


def test_batch_typed_values(table):
    guid = uuid.uuid4()
    when = datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=timezone.utc)
    table.submit_transaction(
        [
            (
                "create",
                {
                    "PartitionKey": "pk",
                    "RowKey": "rk",
                    "i64": EntityProperty(2**40, EdmType.INT64),
                    "dt": when,
                    "g": guid,
                    "bin": b"\x00\xff",
                    "nan": float("nan"),
                    "d": 5.0,
                },
            )
        ]
    )
    got = table.get_entity("pk", "rk")
    assert got["i64"].value == 2**40 and got["i64"].edm_type == EdmType.INT64
    assert got["dt"] == when
    assert got["g"] == guid
    assert got["bin"] == b"\x00\xff"
    assert got["nan"] != got["nan"]
    assert type(got["d"]) is float and got["d"] == 5.0


@pytest.mark.parametrize("key", ["A'aaa_bbbb2\"", ":@", "+,$", "=& ", "caf\u00e9", ""])
def test_batch_special_character_keys(table, key):
    table.create_entity({"PartitionKey": key, "RowKey": key + "old"})
    result = table.submit_transaction(
        [
            ("create", {"PartitionKey": key, "RowKey": key, "v": 1}),
            ("upsert", {"PartitionKey": key, "RowKey": key + "up", "v": 2}),
            ("delete", {"PartitionKey": key, "RowKey": key + "old"}),
        ]
    )
    assert len(result) == 3
    assert table.get_entity(key, key)["v"] == 1
    assert table.get_entity(key, key + "up")["v"] == 2
    assert not _exists(table, key, key + "old")


def test_batches_in_different_partitions_of_one_table(table):
    table.submit_transaction([("create", {"PartitionKey": "a", "RowKey": str(i)}) for i in range(5)])
    table.submit_transaction([("create", {"PartitionKey": "b", "RowKey": str(i)}) for i in range(5)])
    keys = [(e["PartitionKey"], e["RowKey"]) for e in table.list_entities()]
    assert keys == [(pk, str(i)) for pk in "ab" for i in range(5)]


# ---------------------------------------------------------------------------
# Failures: one failing operation, reported by index; nothing is applied.
# ---------------------------------------------------------------------------


def test_batch_failure_on_existing_entity_rolls_back(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "existing", "v": "original"})
    table.create_entity({"PartitionKey": "pk", "RowKey": "to-update", "v": "original"})
    ops = [
        ("create", {"PartitionKey": "pk", "RowKey": "new1"}),
        ("update", {"PartitionKey": "pk", "RowKey": "to-update", "v": "changed"}, {"mode": UpdateMode.REPLACE}),
        ("create", {"PartitionKey": "pk", "RowKey": "new2"}),
        ("create", {"PartitionKey": "pk", "RowKey": "existing", "v": "dup"}),
        ("create", {"PartitionKey": "pk", "RowKey": "new3"}),
    ]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    assert info.value.index == 3
    assert error_code_of(info.value) == "EntityAlreadyExists"
    # The failed sub-response carries the operation's own status (Azure docs: "Performing entity group transactions").
    assert info.value.status_code == 409
    # Nothing was applied.
    for rk in ("new1", "new2", "new3"):
        assert not _exists(table, "pk", rk)
    assert table.get_entity("pk", "to-update")["v"] == "original"
    assert table.get_entity("pk", "existing")["v"] == "original"


def test_batch_failure_on_missing_entity_update(table):
    ops = [
        ("create", {"PartitionKey": "pk", "RowKey": "a"}),
        ("update", {"PartitionKey": "pk", "RowKey": "missing", "v": 1}, {"mode": UpdateMode.MERGE}),
    ]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    assert info.value.index == 1
    assert error_code_of(info.value) == "ResourceNotFound"
    assert info.value.status_code == 404
    assert not _exists(table, "pk", "a")


def test_batch_failure_on_missing_entity_delete(table):
    ops = [
        ("create", {"PartitionKey": "pk", "RowKey": "a"}),
        ("delete", {"PartitionKey": "pk", "RowKey": "missing"}),
    ]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    assert info.value.index == 1
    assert error_code_of(info.value) == "ResourceNotFound"
    assert info.value.status_code == 404
    assert not _exists(table, "pk", "a")


def test_batch_failure_on_stale_etag(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    stale = table.get_entity("pk", "rk")
    table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 2})
    stale["v"] = 3
    ops = [
        ("create", {"PartitionKey": "pk", "RowKey": "other"}),
        (
            "update",
            stale,
            {"mode": UpdateMode.MERGE, "etag": stale.metadata["etag"], "match_condition": MatchConditions.IfNotModified},
        ),
    ]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    assert info.value.index == 1
    assert error_code_of(info.value) == "UpdateConditionNotSatisfied"
    assert info.value.status_code == 412
    assert table.get_entity("pk", "rk")["v"] == 2
    assert not _exists(table, "pk", "other")


def test_batch_failure_on_invalid_entity(table):
    ops = [
        ("create", {"PartitionKey": "pk", "RowKey": "ok"}),
        ("create", {"PartitionKey": "pk", "RowKey": "bad", "p" * 256: 1}),
    ]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    assert info.value.index == 1
    assert error_code_of(info.value) == "PropertyNameTooLong"
    assert info.value.status_code == 400
    assert not _exists(table, "pk", "ok")


def test_batch_more_than_100_operations(table):
    ops = [("create", {"PartitionKey": "pk", "RowKey": f"{i:03d}"}) for i in range(101)]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    # Recorded against Azure: "99:The batch request operation exceeds the
    # maximum 100 changes per change set."
    assert error_code_of(info.value) == "InvalidInput"
    assert info.value.status_code == 400
    assert info.value.index == 99
    assert list(table.list_entities()) == []


def test_batch_duplicate_row_merge_then_replace(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 0})
    ops = [
        ("update", {"PartitionKey": "pk", "RowKey": "rk", "v": 1}, {"mode": UpdateMode.MERGE}),
        ("update", {"PartitionKey": "pk", "RowKey": "rk", "v": 2}, {"mode": UpdateMode.REPLACE}),
    ]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    assert info.value.index == 1
    assert error_code_of(info.value) == "InvalidDuplicateRow"
    assert info.value.status_code == 400
    assert table.get_entity("pk", "rk")["v"] == 0


def test_batch_duplicate_row_create_twice(table):
    ops = [
        ("create", {"PartitionKey": "pk", "RowKey": "x"}),
        ("create", {"PartitionKey": "pk", "RowKey": "y"}),
        ("create", {"PartitionKey": "pk", "RowKey": "x"}),
    ]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    assert info.value.index == 2
    assert error_code_of(info.value) == "InvalidDuplicateRow"
    assert info.value.status_code == 400
    assert list(table.list_entities()) == []


def test_batch_different_partitions_rejected_by_server(table, monkeypatch):
    # The SDK refuses mixed partitions before sending; switch that check off
    # so the server's own answer is exercised with an SDK-built request.
    from azure.data.tables import _table_batch

    monkeypatch.setattr(_table_batch.TableBatchOperations, "_verify_partition_key", lambda self, entity: None)
    ops = [
        ("create", {"PartitionKey": "a", "RowKey": "1"}),
        ("create", {"PartitionKey": "b", "RowKey": "1"}),
    ]
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(ops)
    assert info.value.index == 1
    assert error_code_of(info.value) == "CommandsInBatchActOnDifferentPartitions"
    assert info.value.status_code == 400
    assert list(table.list_entities()) == []


def test_batch_on_missing_table(service):
    client = service.get_table_client(unique_table_name("NoSuchTable"))
    with pytest.raises(TableTransactionError) as info:
        client.submit_transaction([("create", {"PartitionKey": "pk", "RowKey": "rk"})])
    assert error_code_of(info.value) == "TableNotFound"
    assert info.value.status_code == 404
    assert info.value.index == 0
