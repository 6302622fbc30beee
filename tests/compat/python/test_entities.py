"""Entities: CRUD, upserts, ETags, EDM types, keys, limits (Azure docs: "Get Entity" through "Insert Or Merge Entity", "Update Entity", "Payload format for Table service operations", "Understanding the Table service data model")."""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import (
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)
from azure.data.tables import EdmType, EntityProperty, TableEntity, UpdateMode

from support import ResponseCapture, custom_properties, error_code_of, wire_error


# ---------------------------------------------------------------------------
# Create / get
# ---------------------------------------------------------------------------


def test_create_and_get_entity(table):
    entity = {"PartitionKey": "pk", "RowKey": "rk", "Name": "Ada", "Age": 36, "Active": True}
    meta = table.create_entity(entity)
    assert meta["etag"]
    got = table.get_entity("pk", "rk")
    assert isinstance(got, TableEntity)
    assert got["PartitionKey"] == "pk" and got["RowKey"] == "rk"
    assert custom_properties(got) == {"Name": "Ada", "Age": 36, "Active": True}
    assert got.metadata["etag"] == meta["etag"]


def test_create_duplicate_entity_raises_resource_exists(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    with pytest.raises(ResourceExistsError) as info:
        table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 2})
    assert info.value.status_code == 409
    assert error_code_of(info.value) == "EntityAlreadyExists"
    # The original survives.
    assert table.get_entity("pk", "rk")["v"] == 1


def test_get_missing_entity_raises_resource_not_found(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "exists"})
    with pytest.raises(ResourceNotFoundError) as info:
        table.get_entity("pk", "missing")
    assert info.value.status_code == 404
    assert error_code_of(info.value) == "ResourceNotFound"


def test_create_entity_without_row_key_is_rejected(table):
    # The SDK maps PropertiesNeedValue for a missing key to ValueError.
    with pytest.raises((ValueError, HttpResponseError)) as info:
        table.create_entity({"PartitionKey": "pk", "v": 1})
    status, code, _ = wire_error(info.value)
    assert (status, code) == (400, "PropertiesNeedValue")


@pytest.mark.query  # $select
def test_get_entity_with_select(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "a": 1, "b": "two", "c": 3.5})
    got = table.get_entity("pk", "rk", select=["a", "c"])
    assert dict(got) == {"a": 1, "c": 3.5}
    # odata.etag is still sent although Timestamp was not selected (Azure docs: "Querying tables and entities").
    assert got.metadata["etag"]


def test_entity_metadata_etag_and_timestamp(table):
    before = datetime.now(timezone.utc)
    meta = table.create_entity({"PartitionKey": "pk", "RowKey": "rk"})
    got = table.get_entity("pk", "rk")
    etag = got.metadata["etag"]
    timestamp = got.metadata["timestamp"]
    assert etag == meta["etag"]
    assert isinstance(timestamp, datetime)
    assert abs(timestamp - before) < timedelta(minutes=5)
    # ETag is the weak datetime form built from the Timestamp text (Azure docs: "Update Entity").
    service_text = timestamp.tables_service_value
    assert etag == "W/\"datetime'" + quote(service_text) + "'\""
    assert service_text.endswith("Z")
    # Timestamp is not returned as a custom property.
    assert "Timestamp" not in got


def test_timestamp_and_etag_change_on_every_write(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "n": 0})
    first = table.get_entity("pk", "rk").metadata
    etags = {first["etag"]}
    last_ts = first["timestamp"]
    for n in range(1, 4):
        table.update_entity({"PartitionKey": "pk", "RowKey": "rk", "n": n}, mode=UpdateMode.MERGE)
        meta = table.get_entity("pk", "rk").metadata
        assert meta["etag"] not in etags
        assert meta["timestamp"] >= last_ts
        etags.add(meta["etag"])
        last_ts = meta["timestamp"]


def test_client_supplied_timestamp_is_ignored(table):
    old = datetime(2001, 1, 1, tzinfo=timezone.utc)
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "Timestamp": old})
    got = table.get_entity("pk", "rk")
    assert got.metadata["timestamp"].year >= 2020
    assert "Timestamp" not in got


def test_null_values_are_not_stored(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "kept": "x", "gone": None})
    assert custom_properties(table.get_entity("pk", "rk")) == {"kept": "x"}


# ---------------------------------------------------------------------------
# Update / upsert
# ---------------------------------------------------------------------------


def test_update_replace_removes_missing_properties(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "a": 1, "b": 2})
    table.update_entity({"PartitionKey": "pk", "RowKey": "rk", "b": 20, "c": 30}, mode=UpdateMode.REPLACE)
    assert custom_properties(table.get_entity("pk", "rk")) == {"b": 20, "c": 30}


def test_update_merge_keeps_other_properties(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "a": 1, "b": 2})
    table.update_entity({"PartitionKey": "pk", "RowKey": "rk", "b": 20, "c": 30}, mode=UpdateMode.MERGE)
    assert custom_properties(table.get_entity("pk", "rk")) == {"a": 1, "b": 20, "c": 30}


def test_merge_changes_property_type(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": "text"})
    table.update_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 7.5}, mode=UpdateMode.MERGE)
    got = table.get_entity("pk", "rk")["v"]
    assert isinstance(got, float) and got == 7.5


@pytest.mark.parametrize("mode", [UpdateMode.REPLACE, UpdateMode.MERGE])
def test_update_missing_entity_raises_resource_not_found(table, mode):
    with pytest.raises(ResourceNotFoundError) as info:
        table.update_entity({"PartitionKey": "pk", "RowKey": "nope", "a": 1}, mode=mode)
    assert error_code_of(info.value) == "ResourceNotFound"
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("pk", "nope")


def test_upsert_replace_inserts_then_replaces(table):
    meta = table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "a": 1, "b": 2}, mode=UpdateMode.REPLACE)
    assert meta["etag"]
    assert custom_properties(table.get_entity("pk", "rk")) == {"a": 1, "b": 2}
    table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "c": 3}, mode=UpdateMode.REPLACE)
    assert custom_properties(table.get_entity("pk", "rk")) == {"c": 3}


def test_upsert_merge_inserts_then_merges(table):
    meta = table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "a": 1}, mode=UpdateMode.MERGE)
    assert meta["etag"]
    assert custom_properties(table.get_entity("pk", "rk")) == {"a": 1}
    table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "b": 2}, mode=UpdateMode.MERGE)
    assert custom_properties(table.get_entity("pk", "rk")) == {"a": 1, "b": 2}


def test_upsert_returns_etag_of_stored_entity(table):
    meta = table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "a": 1})
    assert table.get_entity("pk", "rk").metadata["etag"] == meta["etag"]
    meta2 = table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "a": 2})
    assert meta2["etag"] != meta["etag"]
    assert table.get_entity("pk", "rk").metadata["etag"] == meta2["etag"]


# ---------------------------------------------------------------------------
# ETags and If-Match
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [UpdateMode.REPLACE, UpdateMode.MERGE])
def test_update_with_current_etag_succeeds(table, mode):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    current = table.get_entity("pk", "rk")
    current["v"] = 2
    meta = table.update_entity(current, mode=mode, match_condition=MatchConditions.IfNotModified)
    assert meta["etag"] != current.metadata["etag"]
    assert table.get_entity("pk", "rk")["v"] == 2


@pytest.mark.parametrize("mode", [UpdateMode.REPLACE, UpdateMode.MERGE])
def test_update_with_stale_etag_raises_resource_modified(table, mode):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    stale = table.get_entity("pk", "rk")
    table.update_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 2})  # someone else writes
    stale["v"] = 3
    with pytest.raises(ResourceModifiedError) as info:
        table.update_entity(stale, mode=mode, match_condition=MatchConditions.IfNotModified)
    assert info.value.status_code == 412
    assert error_code_of(info.value) == "UpdateConditionNotSatisfied"
    assert table.get_entity("pk", "rk")["v"] == 2


def test_update_with_explicit_stale_etag_keyword(table):
    meta = table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 2})
    with pytest.raises(ResourceModifiedError):
        table.update_entity(
            {"PartitionKey": "pk", "RowKey": "rk", "v": 3},
            etag=meta["etag"],
            match_condition=MatchConditions.IfNotModified,
        )


def test_update_unconditionally_ignores_etag(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    stale = table.get_entity("pk", "rk")
    table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 2})
    stale["v"] = 3
    # A plain dict carries no etag, so the SDK sends If-Match: *.
    table.update_entity(dict(stale), mode=UpdateMode.REPLACE, match_condition=MatchConditions.Unconditionally)
    assert table.get_entity("pk", "rk")["v"] == 3


def test_delete_entity_unconditionally(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk"})
    table.delete_entity("pk", "rk")
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("pk", "rk")


def test_delete_entity_by_entity_object(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk"})
    table.delete_entity(table.get_entity("pk", "rk"))
    assert list(table.list_entities()) == []


def test_delete_entity_with_matching_etag(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk"})
    current = table.get_entity("pk", "rk")
    table.delete_entity(current, match_condition=MatchConditions.IfNotModified)
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("pk", "rk")


def test_delete_entity_with_stale_etag_raises_resource_modified(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    stale = table.get_entity("pk", "rk")
    table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 2})
    with pytest.raises(ResourceModifiedError) as info:
        table.delete_entity(stale, match_condition=MatchConditions.IfNotModified)
    assert info.value.status_code == 412
    assert error_code_of(info.value) == "UpdateConditionNotSatisfied"
    assert table.get_entity("pk", "rk")["v"] == 2


def test_delete_missing_entity_is_404_resource_not_found(table):
    # The SDK swallows a 404 on delete_entity by design; check the wire answer.
    capture = ResponseCapture()
    table.delete_entity("pk", "never", **capture.kwargs)
    status, code, _ = capture.last_error()
    assert (status, code) == (404, "ResourceNotFound")


# ---------------------------------------------------------------------------
# EDM types
# ---------------------------------------------------------------------------


def test_all_edm_types_round_trip(table):
    guid = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
    when = datetime(2008, 7, 10, 12, 34, 56, 789123, tzinfo=timezone.utc)
    entity = {
        "PartitionKey": "pk",
        "RowKey": "rk",
        "Str": "hello",
        "EmptyStr": "",
        "Int32": 2147483647,
        "Int32Neg": -2147483648,
        "Int64": EntityProperty(9223372036854775807, EdmType.INT64),
        "Int64Neg": EntityProperty(-9223372036854775808, EdmType.INT64),
        "Int64Small": EntityProperty(255, EdmType.INT64),
        "Double": 1234.5678,
        "DoubleNeg": -0.000123,
        "DoubleBig": 1.7976931348623157e308,
        "Bool": True,
        "BoolF": False,
        "Date": when,
        "Guid": guid,
        "Bin": b"\x00\x01\x02\xfe\xff",
        "EmptyBin": EntityProperty(b"", EdmType.BINARY),
    }
    table.create_entity(entity)
    got = table.get_entity("pk", "rk")

    assert got["Str"] == "hello" and isinstance(got["Str"], str)
    assert got["EmptyStr"] == ""
    assert got["Int32"] == 2147483647 and type(got["Int32"]) is int
    assert got["Int32Neg"] == -2147483648 and type(got["Int32Neg"]) is int
    for name, value in (
        ("Int64", 9223372036854775807),
        ("Int64Neg", -9223372036854775808),
        ("Int64Small", 255),
    ):
        assert isinstance(got[name], EntityProperty), name
        assert got[name].edm_type == EdmType.INT64, name
        assert got[name].value == value, name
    assert got["Double"] == 1234.5678 and isinstance(got["Double"], float)
    assert got["DoubleNeg"] == -0.000123
    assert got["DoubleBig"] == 1.7976931348623157e308
    assert got["Bool"] is True and got["BoolF"] is False
    assert got["Date"] == when and isinstance(got["Date"], datetime)
    assert got["Guid"] == guid and isinstance(got["Guid"], uuid.UUID)
    assert got["Bin"] == b"\x00\x01\x02\xfe\xff" and isinstance(got["Bin"], bytes)
    assert got["EmptyBin"] == b""


def test_special_doubles_round_trip(table):
    table.create_entity(
        {"PartitionKey": "pk", "RowKey": "rk", "nan": float("nan"), "inf": float("inf"), "ninf": float("-inf")}
    )
    got = table.get_entity("pk", "rk")
    assert isinstance(got["nan"], float) and math.isnan(got["nan"])
    assert got["inf"] == float("inf")
    assert got["ninf"] == float("-inf")


def test_integral_double_stays_double(table):
    # Azure writes integral doubles as 5.0 (Azure docs: "Payload format for Table service operations"), so the SDK reads a float,
    # not an Int32.
    table.create_entity(
        {"PartitionKey": "pk", "RowKey": "rk", "five": 5.0, "zero": 0.0, "typed": EntityProperty(2, EdmType.DOUBLE)}
    )
    got = table.get_entity("pk", "rk")
    for name, value in (("five", 5.0), ("zero", 0.0), ("typed", 2.0)):
        assert type(got[name]) is float, f"{name} came back as {type(got[name]).__name__}"
        assert got[name] == value


def test_explicitly_typed_int32_and_string(table):
    table.create_entity(
        {
            "PartitionKey": "pk",
            "RowKey": "rk",
            "i": EntityProperty(42, EdmType.INT32),
            "s": EntityProperty("42", EdmType.STRING),
            "b": EntityProperty(True, EdmType.BOOLEAN),
        }
    )
    got = table.get_entity("pk", "rk")
    assert got["i"] == 42 and type(got["i"]) is int
    assert got["s"] == "42" and isinstance(got["s"], str)
    assert got["b"] is True


@pytest.mark.parametrize(
    "sent, expected",
    [
        # 7-digit precision is kept exactly.
        ("2021-07-08T09:10:09.1234567Z", "2021-07-08T09:10:09.1234567Z"),
        # Trailing zeros of the fraction are dropped; a zero fraction vanishes (Azure docs: "Understanding the Table service data model").
        ("1973-10-04T00:00:00.000000Z", "1973-10-04T00:00:00Z"),
        ("2020-01-02T03:04:05.1100000Z", "2020-01-02T03:04:05.11Z"),
        ("2020-01-02T03:04:05.111Z", "2020-01-02T03:04:05.111Z"),
        ("2020-01-02T03:04:05.997233Z", "2020-01-02T03:04:05.997233Z"),
        ("2020-01-02T03:04:05Z", "2020-01-02T03:04:05Z"),
        # Extremes of the range.
        ("1601-01-01T00:00:00Z", "1601-01-01T00:00:00Z"),
        ("9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z"),
        # More than 7 digits are cut to 7 (recorded against Azure).
        ("2023-04-11T21:16:40.331047814Z", "2023-04-11T21:16:40.3310478Z"),
        # A +00:00 offset is accepted and written as Z.
        ("2023-04-11T21:16:40.331+00:00", "2023-04-11T21:16:40.331Z"),
    ],
)
def test_datetime_text_round_trip(table, sent, expected):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "d": EntityProperty(sent, EdmType.DATETIME)})
    got = table.get_entity("pk", "rk")["d"]
    assert isinstance(got, datetime)
    assert got.tables_service_value == expected


def test_tables_entity_datetime_round_trips_with_seven_digits(table):
    table.create_entity(
        {"PartitionKey": "pk", "RowKey": "a", "d": EntityProperty("2022-02-02T02:02:02.7654321Z", EdmType.DATETIME)}
    )
    read = table.get_entity("pk", "a")["d"]
    # Writing the TablesEntityDatetime back keeps all 7 digits.
    table.create_entity({"PartitionKey": "pk", "RowKey": "b", "d": read})
    again = table.get_entity("pk", "b")["d"]
    assert again.tables_service_value == "2022-02-02T02:02:02.7654321Z"
    assert again == read


def test_datetime_object_with_microseconds(table):
    when = datetime(2019, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "d": when})
    got = table.get_entity("pk", "rk")["d"]
    assert got == when
    assert got.tables_service_value == "2019-12-31T23:59:59.999999Z"


def test_datetime_with_offset_is_stored_as_utc(table):
    local = datetime(2020, 6, 1, 12, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "d": local})
    got = table.get_entity("pk", "rk")["d"]
    assert got == local
    assert got.tables_service_value == "2020-06-01T10:00:00Z"


def test_large_binary_and_unicode_string_round_trip(table):
    blob = bytes(range(256)) * 200  # 51,200 bytes
    text = "\u554a\u9f44\u4e02 \U0001F600 caf\u00e9 " * 500
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "blob": blob, "text": text})
    got = table.get_entity("pk", "rk")
    assert got["blob"] == blob
    assert got["text"] == text


def test_unicode_property_name(table):
    name = "\u554a\u9f44\u4e02\u72db\u72dc"
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", name: "\ua015"})
    assert table.get_entity("pk", "rk")[name] == "\ua015"


def test_same_property_name_different_types_across_entities(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "1", "v": "text"})
    table.create_entity({"PartitionKey": "pk", "RowKey": "2", "v": 5})
    table.create_entity({"PartitionKey": "pk", "RowKey": "3", "v": EntityProperty(5, EdmType.INT64)})
    assert table.get_entity("pk", "1")["v"] == "text"
    assert table.get_entity("pk", "2")["v"] == 5
    assert table.get_entity("pk", "3")["v"].edm_type == EdmType.INT64


# ---------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------

SPECIAL_KEYS = [
    "A'aaa_bbbb2\"",
    "it''s",
    "'",
    '"',
    ":@",
    "+,$",
    "=& ",
    "a b",
    "100%",
    "semi;colon",
    "paren(1)",
    "star*bang!",
    "tilde~dot.dash-under_",
    "caf\u00e9",
    "\u554a\u9f44\u4e02",
    "emoji\U0001F600",
    " leading and trailing ",
]


@pytest.mark.parametrize("key", SPECIAL_KEYS, ids=[f"k{i}" for i in range(len(SPECIAL_KEYS))])
def test_special_character_keys_round_trip(table, key):
    table.create_entity({"PartitionKey": key, "RowKey": key, "v": key})
    got = table.get_entity(key, key)
    assert (got["PartitionKey"], got["RowKey"], got["v"]) == (key, key, key)
    table.update_entity({"PartitionKey": key, "RowKey": key, "w": 1}, mode=UpdateMode.MERGE)
    assert table.get_entity(key, key)["w"] == 1
    listed = list(table.list_entities())
    assert [(e["PartitionKey"], e["RowKey"]) for e in listed] == [(key, key)]
    table.delete_entity(key, key)
    with pytest.raises(ResourceNotFoundError):
        table.get_entity(key, key)


def test_empty_string_keys(table):
    table.create_entity({"PartitionKey": "", "RowKey": "", "v": "empty"})
    got = table.get_entity("", "")
    assert (got["PartitionKey"], got["RowKey"], got["v"]) == ("", "", "empty")
    table.upsert_entity({"PartitionKey": "", "RowKey": "", "v": "again"})
    assert table.get_entity("", "")["v"] == "again"
    table.delete_entity("", "")
    assert list(table.list_entities()) == []


def test_keys_are_case_sensitive(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "Row", "v": 1})
    table.create_entity({"PartitionKey": "pk", "RowKey": "row", "v": 2})
    table.create_entity({"PartitionKey": "PK", "RowKey": "row", "v": 3})
    assert table.get_entity("pk", "Row")["v"] == 1
    assert table.get_entity("pk", "row")["v"] == 2
    assert table.get_entity("PK", "row")["v"] == 3


def test_key_of_1024_chars_accepted(table):
    key = "k" * 1024
    table.create_entity({"PartitionKey": key, "RowKey": key})
    assert table.get_entity(key, key)["RowKey"] == key


@pytest.mark.parametrize("bad", ["a/b", "a\\b", "a#b", "a?b", "tab\there", "nl\nhere"])
def test_forbidden_key_characters_rejected(table, bad):
    with pytest.raises(HttpResponseError) as info:
        table.create_entity({"PartitionKey": "pk", "RowKey": bad})
    assert info.value.status_code == 400


# ---------------------------------------------------------------------------
# Limits (Azure docs: "Understanding the Table service data model")
# ---------------------------------------------------------------------------


def test_property_name_of_255_chars_accepted(table):
    name = "p" * 255
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", name: 1})
    assert table.get_entity("pk", "rk")[name] == 1


def test_property_name_too_long(table):
    with pytest.raises(HttpResponseError) as info:
        table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "p" * 256: 1})
    assert info.value.status_code == 400
    assert error_code_of(info.value) == "PropertyNameTooLong"


def test_252_custom_properties_accepted(table):
    entity = {"PartitionKey": "pk", "RowKey": "rk"}
    entity.update({f"p{i:03d}": i for i in range(252)})
    table.create_entity(entity)
    assert len(custom_properties(table.get_entity("pk", "rk"))) == 252


@pytest.mark.parametrize("count", [253, 255])
def test_too_many_properties(table, count):
    entity = {"PartitionKey": "pk", "RowKey": "rk"}
    entity.update({f"p{i:03d}": i for i in range(count)})
    with pytest.raises(HttpResponseError) as info:
        table.create_entity(entity)
    assert info.value.status_code == 400
    assert error_code_of(info.value) == "TooManyProperties"


def test_string_of_32k_chars_accepted(table):
    text = "x" * 32 * 1024
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "s": text})
    assert table.get_entity("pk", "rk")["s"] == text


def test_string_too_large(table):
    with pytest.raises(HttpResponseError) as info:
        table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "s": "x" * (32 * 1024 + 1)})
    assert info.value.status_code == 400
    assert error_code_of(info.value) == "PropertyValueTooLarge"


def test_binary_of_64k_accepted(table):
    blob = b"\x07" * (64 * 1024)
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "b": blob})
    assert table.get_entity("pk", "rk")["b"] == blob


def test_binary_too_large(table):
    with pytest.raises(HttpResponseError) as info:
        table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "b": b"\x07" * (64 * 1024 + 1)})
    assert info.value.status_code == 400
    assert error_code_of(info.value) == "PropertyValueTooLarge"


def test_entity_just_under_1mib_accepted(table):
    # 15 strings of 30,000 chars ~ 15 * 60 KB = 900 KB by Azure's accounting.
    entity = {"PartitionKey": "pk", "RowKey": "rk"}
    entity.update({f"s{i:02d}": chr(ord("a") + i) * 30_000 for i in range(15)})
    table.create_entity(entity)
    assert custom_properties(table.get_entity("pk", "rk")) == custom_properties(entity)


def test_entity_too_large(table):
    # 20 strings of 30,000 chars ~ 1.2 MB by Azure's accounting (UTF-16).
    entity = {"PartitionKey": "pk", "RowKey": "rk"}
    entity.update({f"s{i:02d}": "x" * 30_000 for i in range(20)})
    with pytest.raises(HttpResponseError) as info:
        table.create_entity(entity)
    assert info.value.status_code == 400
    assert error_code_of(info.value) == "EntityTooLarge"
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("pk", "rk")


def test_limits_apply_to_updates_too(table):
    table.create_entity({"PartitionKey": "pk", "RowKey": "rk", "v": 1})
    with pytest.raises(HttpResponseError) as info:
        table.update_entity({"PartitionKey": "pk", "RowKey": "rk", "p" * 256: 1}, mode=UpdateMode.MERGE)
    assert error_code_of(info.value) == "PropertyNameTooLong"
    with pytest.raises(HttpResponseError) as info:
        table.upsert_entity({"PartitionKey": "pk", "RowKey": "rk", "s": "x" * (32 * 1024 + 1)})
    assert error_code_of(info.value) == "PropertyValueTooLarge"
    assert custom_properties(table.get_entity("pk", "rk")) == {"v": 1}
