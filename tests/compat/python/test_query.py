"""query_entities: $filter on every type, key ranges, $select, $top paging (Azure docs: "Querying tables and entities")."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.exceptions import HttpResponseError
from azure.data.tables import EdmType, EntityProperty

from conftest import CLIENT_KWARGS, connection_string, unique_table_name
from support import bulk_insert, error_code_of, keys_of

pytestmark = pytest.mark.query

PARTITIONS = ["pA", "pB", "pC"]
PER_PARTITION = 400
TOTAL = len(PARTITIONS) * PER_PARTITION  # 1,200
BASE_TIME = datetime(2020, 1, 1, tzinfo=timezone.utc)


def make_entity(i: int) -> dict:
    entity = {
        "PartitionKey": PARTITIONS[i // PER_PARTITION],
        "RowKey": f"{i % PER_PARTITION:04d}",
        "i": i,  # global index 0..1199, Int32
        "i64": EntityProperty(i * 10_000_000_000, EdmType.INT64),
        "dbl": i + 0.5,
        "even": i % 2 == 0,
        "s": f"name{i:04d}",
        "dt": BASE_TIME + timedelta(hours=i),
        "g": uuid.UUID(int=i),
        "bin": i.to_bytes(2, "big"),
    }
    if i % 3 == 0:
        entity["opt"] = i
    # Same name, different types in different entities (schemaless).
    entity["mixed"] = str(i) if i % 2 else i
    return entity


def key_of(i: int):
    return (PARTITIONS[i // PER_PARTITION], f"{i % PER_PARTITION:04d}")


def indexes(entities):
    return [e["i"] for e in entities]


@pytest.fixture(scope="module")
def qtable(service):
    name = unique_table_name("query")
    client = service.create_table(name)
    bulk_insert(connection_string(), name, (make_entity(i) for i in range(TOTAL)), **CLIENT_KWARGS)
    yield client
    service.delete_table(name)


# Entities are stored in (PartitionKey, RowKey) order, which for this data set
# is the order of the global index i.
def expect(pred):
    return [i for i in range(TOTAL) if pred(i)]


# ---------------------------------------------------------------------------
# Filters on each type
# ---------------------------------------------------------------------------


def test_filter_string_eq(qtable):
    assert indexes(qtable.query_entities("s eq 'name0005'")) == [5]


def test_filter_string_range(qtable):
    got = indexes(qtable.query_entities("s ge 'name0100' and s lt 'name0110'"))
    assert got == list(range(100, 110))


def test_filter_string_parameter_with_quote(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "1", "s": "o'clock"})
    table.create_entity({"PartitionKey": "p", "RowKey": "2", "s": "oclock"})
    got = keys_of(table.query_entities("s eq @v", parameters={"v": "o'clock"}))
    assert got == [("p", "1")]


def test_filter_int32(qtable):
    assert indexes(qtable.query_entities("i lt 5")) == [0, 1, 2, 3, 4]
    assert indexes(qtable.query_entities("i eq @v", parameters={"v": 777})) == [777]
    assert indexes(qtable.query_entities("i ge 1195")) == expect(lambda i: i >= 1195)
    assert indexes(qtable.query_entities("i ne 0 and i le 3")) == [1, 2, 3]


def test_filter_int64(qtable):
    got = indexes(qtable.query_entities("i64 gt @v", parameters={"v": 11_950_000_000_000}))
    assert got == expect(lambda i: i * 10_000_000_000 > 11_950_000_000_000)
    assert indexes(qtable.query_entities("i64 eq 70000000000L")) == [7]


def test_filter_double(qtable):
    assert indexes(qtable.query_entities("dbl ge 1197.5")) == [1197, 1198, 1199]
    assert indexes(qtable.query_entities("dbl eq @v", parameters={"v": 3.5})) == [3]
    assert indexes(qtable.query_entities("dbl lt 2.0")) == [0, 1]


def test_filter_boolean(qtable):
    got = indexes(qtable.query_entities("even eq true and i lt 10"))
    assert got == [0, 2, 4, 6, 8]
    got = indexes(qtable.query_entities("even eq @b and i lt 10", parameters={"b": False}))
    assert got == [1, 3, 5, 7, 9]


def test_bare_true_and_false_are_filters(qtable):
    # What a health check sends (`false`) and what LINQ predicate builders produce; `True`
    # is not the literal: filters are case-sensitive.
    assert indexes(qtable.query_entities("false")) == []
    assert indexes(qtable.query_entities("(true and i lt 3) or (false or i eq 1199)")) == [0, 1, 2, 1199]
    with pytest.raises(HttpResponseError) as e:
        list(qtable.query_entities("even eq True"))
    assert error_code_of(e.value) == "InvalidInput"


def test_filter_datetime(qtable):
    cutoff = BASE_TIME + timedelta(hours=1190)
    got = indexes(qtable.query_entities("dt gt @d", parameters={"d": cutoff}))
    assert got == expect(lambda i: i > 1190)
    got = indexes(qtable.query_entities("dt eq datetime'2020-01-01T05:00:00Z'"))
    assert got == [5]


def test_filter_guid(qtable):
    got = indexes(qtable.query_entities("g eq @g", parameters={"g": uuid.UUID(int=42)}))
    assert got == [42]
    got = indexes(qtable.query_entities(f"g eq guid'{uuid.UUID(int=43)}'"))
    assert got == [43]


def test_filter_binary(qtable):
    got = indexes(qtable.query_entities("bin eq @b", parameters={"b": (300).to_bytes(2, "big")}))
    assert got == [300]
    assert indexes(qtable.query_entities("bin eq X'012d'")) == [301]
    assert indexes(qtable.query_entities("bin eq binary'012e'")) == [302]


def test_filter_timestamp(qtable):
    long_ago = datetime(2000, 1, 1, tzinfo=timezone.utc)
    assert len(list(qtable.query_entities("Timestamp gt @t", parameters={"t": long_ago}))) == TOTAL
    future = datetime.now(timezone.utc) + timedelta(days=1)
    assert list(qtable.query_entities("Timestamp gt @t", parameters={"t": future})) == []


def test_filter_missing_property_never_matches(qtable):
    assert indexes(qtable.query_entities("opt ge 0 and i lt 10")) == [0, 3, 6, 9]
    assert list(qtable.query_entities("nosuchproperty eq 1")) == []


def test_filter_compares_only_matching_types(qtable):
    # "mixed" is an Int32 on even i and a String on odd i. An Int32 literal
    # only matches the Int32 values, a string literal only the strings.
    assert indexes(qtable.query_entities("mixed lt 6")) == [0, 2, 4]
    assert indexes(qtable.query_entities("mixed eq '7'")) == [7]
    # String "30" does not satisfy an Int32 comparison (Azure docs: "Querying tables and entities").
    assert 31 not in indexes(qtable.query_entities("mixed gt 20 and i lt 40"))


# ---------------------------------------------------------------------------
# Keys, boolean structure
# ---------------------------------------------------------------------------


def test_point_query(qtable):
    assert keys_of(qtable.query_entities("PartitionKey eq 'pB' and RowKey eq '0007'")) == [("pB", "0007")]


def test_row_key_range_in_partition(qtable):
    got = keys_of(qtable.query_entities("PartitionKey eq 'pB' and RowKey ge '0100' and RowKey lt '0200'"))
    assert got == [("pB", f"{r:04d}") for r in range(100, 200)]


def test_partition_range(qtable):
    got = keys_of(qtable.query_entities("PartitionKey gt 'pA' and PartitionKey lt 'pC'"))
    assert got == [("pB", f"{r:04d}") for r in range(PER_PARTITION)]


def test_row_key_across_partitions(qtable):
    assert keys_of(qtable.query_entities("RowKey eq '0005'")) == [(pk, "0005") for pk in PARTITIONS]


def test_partition_scan_with_property_predicate(qtable):
    got = indexes(qtable.query_entities("PartitionKey eq 'pC' and i ge 1190"))
    assert got == list(range(1190, 1200))


def test_or_and_parentheses(qtable):
    got = indexes(qtable.query_entities("(i lt 2) or (i gt 1197)"))
    assert got == [0, 1, 1198, 1199]
    got = indexes(qtable.query_entities("(i lt 4 or i gt 1196) and even eq true"))
    assert got == [0, 2, 1198]
    got = indexes(qtable.query_entities("RowKey eq '0001' or RowKey eq '0002'"))
    assert got == [1, 2, 401, 402, 801, 802]


def test_not(qtable):
    got = indexes(qtable.query_entities("not (even eq true) and i lt 6"))
    assert got == [1, 3, 5]


def test_no_match_returns_empty(qtable):
    assert list(qtable.query_entities("PartitionKey eq 'nope'")) == []


def test_filter_special_character_keys(table):
    for pk in (":@", "+,$", "=& ", "A'aaa_bbbb2\""):
        table.create_entity({"PartitionKey": pk, "RowKey": "r"})
    assert keys_of(table.query_entities("PartitionKey eq ':@'")) == [(":@", "r")]
    assert keys_of(table.query_entities("PartitionKey eq @pk", parameters={"pk": "=& "})) == [("=& ", "r")]
    assert keys_of(table.query_entities("PartitionKey eq @pk", parameters={"pk": "A'aaa_bbbb2\""})) == [
        ("A'aaa_bbbb2\"", "r")
    ]


def test_invalid_filter_is_400_invalid_input(qtable):
    with pytest.raises(HttpResponseError) as info:
        list(qtable.query_entities("aaa bbb ccc"))
    assert info.value.status_code == 400
    assert error_code_of(info.value) == "InvalidInput"


# ---------------------------------------------------------------------------
# Paging over filtered results
# ---------------------------------------------------------------------------


def test_filtered_results_over_1000_are_paged(qtable):
    pager = qtable.query_entities("i ge 50").by_page()
    pages = [indexes(p) for p in pager]
    assert all(len(p) <= 1000 for p in pages)
    assert len(pages) >= 2
    assert [i for p in pages for i in p] == list(range(50, TOTAL))


def test_filtered_results_per_page(qtable):
    pager = qtable.query_entities("even eq true", results_per_page=100).by_page()
    pages = [indexes(p) for p in pager]
    assert all(len(p) <= 100 for p in pages)
    assert len(pages) >= 6
    assert [i for p in pages for i in p] == expect(lambda i: i % 2 == 0)


def test_sparse_filter_pages_until_exhausted(qtable):
    # Matches are few and far apart; the pager must keep following
    # continuation tokens even if a page comes back empty.
    got = indexes(qtable.query_entities("i eq 3 or i eq 1198", results_per_page=2))
    assert got == [3, 1198]


def test_filtered_continuation_token_resume(qtable):
    pages = qtable.query_entities("even eq false", results_per_page=250).by_page()
    first = indexes(next(pages))
    token = pages.continuation_token
    assert token
    rest = [
        i
        for page in qtable.query_entities("even eq false", results_per_page=250).by_page(continuation_token=token)
        for i in indexes(page)
    ]
    assert first + rest == expect(lambda i: i % 2 == 1)


def test_top_limits_first_page(qtable):
    first = next(qtable.query_entities("PartitionKey eq 'pA'", results_per_page=5).by_page())
    assert indexes(first) == [0, 1, 2, 3, 4]


# ---------------------------------------------------------------------------
# $select
# ---------------------------------------------------------------------------


def test_select_on_query(qtable):
    got = list(qtable.query_entities("i lt 3", select=["i", "s"]))
    assert [dict(e) for e in got] == [{"i": i, "s": f"name{i:04d}"} for i in range(3)]
    for e in got:
        assert e.metadata["etag"]


def test_select_keeps_types(qtable):
    got = list(qtable.query_entities("i eq 9", select=["i64", "dt", "g", "bin", "PartitionKey", "RowKey"]))
    assert len(got) == 1
    e = got[0]
    assert (e["PartitionKey"], e["RowKey"]) == key_of(9)
    assert e["i64"].edm_type == EdmType.INT64 and e["i64"].value == 90_000_000_000
    assert e["dt"] == BASE_TIME + timedelta(hours=9)
    assert e["g"] == uuid.UUID(int=9)
    assert e["bin"] == (9).to_bytes(2, "big")
    assert "s" not in e and "i" not in e


def test_select_on_list_entities(qtable):
    page = next(qtable.list_entities(select="s", results_per_page=3).by_page())
    assert [dict(e) for e in page] == [{"s": f"name{i:04d}"} for i in range(3)]


def test_select_with_spaces_after_commas(qtable):
    got = list(qtable.query_entities("i eq 1", select="i, s"))
    assert [dict(e) for e in got] == [{"i": 1, "s": "name0001"}]
