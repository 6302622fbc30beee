"""Listing entities and paging with continuation tokens (Azure docs: "Understanding the Table service data model", "Query timeout and pagination")."""

from __future__ import annotations

import pytest

from conftest import CLIENT_KWARGS, connection_string, unique_table_name
from support import bulk_insert, keys_of, utf16_key

PARTITIONS = ["p0", "p1", "p2", "p3", "p4"]
ROWS_PER_PARTITION = 500
TOTAL = len(PARTITIONS) * ROWS_PER_PARTITION  # 2,500


@pytest.fixture(scope="module")
def big_table(service):
    """One table holding 2,500 entities, shared by the tests of this module."""
    name = unique_table_name("paging")
    client = service.create_table(name)
    # RowKeys are unpadded numbers, so ordinal order (0, 1, 10, 100, ...) differs
    # from numeric order. Insertion order is shuffled by the thread pool.
    entities = [
        {"PartitionKey": pk, "RowKey": str(i), "n": i, "pk_index": p}
        for p, pk in enumerate(PARTITIONS)
        for i in range(ROWS_PER_PARTITION)
    ]
    bulk_insert(connection_string(), name, reversed(entities), **CLIENT_KWARGS)
    expected = sorted(keys_of(entities), key=lambda k: (utf16_key(k[0]), utf16_key(k[1])))
    yield client, expected
    service.delete_table(name)


@pytest.mark.slow
def test_list_entities_returns_all_in_key_order(big_table):
    client, expected = big_table
    got = keys_of(client.list_entities())
    assert len(got) == TOTAL
    assert got == expected
    assert expected[:4] == [("p0", "0"), ("p0", "1"), ("p0", "10"), ("p0", "100")]


@pytest.mark.slow
def test_default_pages_hold_at_most_1000(big_table):
    client, expected = big_table
    pager = client.list_entities().by_page()
    pages = [keys_of(page) for page in pager]
    assert all(len(page) <= 1000 for page in pages), [len(p) for p in pages]
    assert len(pages) >= 3
    assert [k for page in pages for k in page] == expected
    assert pager.continuation_token is None


@pytest.mark.slow
@pytest.mark.parametrize("per_page", [1, 23, 300, 1000])
def test_results_per_page(big_table, per_page):
    client, expected = big_table
    pager = client.list_entities(results_per_page=per_page).by_page()
    got = []
    pages = 0
    for page in pager:
        keys = keys_of(page)
        assert len(keys) <= per_page
        got.extend(keys)
        pages += 1
        if per_page == 1 and pages >= 25:
            break  # 2,500 single-entity pages would only slow the suite down
    if per_page == 1:
        assert got == expected[:25]
        assert pager.continuation_token is not None
    else:
        assert got == expected
        assert pages >= -(-TOTAL // per_page)


@pytest.mark.slow
def test_continuation_token_resumes_in_a_new_pager(big_table):
    client, expected = big_table
    pages = client.list_entities(results_per_page=400).by_page()
    first = keys_of(next(pages))
    second = keys_of(next(pages))
    token = pages.continuation_token
    assert isinstance(token, dict) and token.get("PartitionKey") is not None
    assert len(first) + len(second) <= 800
    # A new pager started from the token continues exactly where we stopped.
    rest = [
        k for page in client.list_entities(results_per_page=400).by_page(continuation_token=token) for k in keys_of(page)
    ]
    assert first + second + rest == expected


@pytest.mark.slow
def test_continuation_token_can_be_reused(big_table):
    client, expected = big_table
    pages = client.list_entities(results_per_page=1000).by_page()
    first = keys_of(next(pages))
    token = pages.continuation_token
    once = keys_of(next(client.list_entities(results_per_page=5).by_page(continuation_token=token)))
    twice = keys_of(next(client.list_entities(results_per_page=5).by_page(continuation_token=token)))
    assert once == twice
    assert once == expected[len(first) : len(first) + 5]


@pytest.mark.slow
def test_entities_carry_properties_and_metadata_when_listed(big_table):
    client, _ = big_table
    seen = 0
    for entity in client.list_entities(results_per_page=1000):
        assert entity["n"] == int(entity["RowKey"])
        assert entity["pk_index"] == PARTITIONS.index(entity["PartitionKey"])
        assert entity.metadata["etag"].startswith('W/"datetime\'')
        assert entity.metadata["timestamp"] is not None
        seen += 1
    assert seen == TOTAL


def test_list_empty_table(table):
    pager = table.list_entities().by_page()
    pages = [list(p) for p in pager]
    assert sum(len(p) for p in pages) == 0
    assert pager.continuation_token is None


def test_ordinal_order_of_non_ascii_and_mixed_casekeys_of(table):
    keys = ["b", "B", "a", "A", "0", "10", "9", " ", "~", "\u00e9", "\u00e9a", "z", "\u554a", "\U0001F600", "Z"]
    for k in keys:
        table.create_entity({"PartitionKey": "pk", "RowKey": k})
        table.create_entity({"PartitionKey": k, "RowKey": "r"})
    got = keys_of(table.list_entities())
    expected = sorted(
        [("pk", k) for k in keys] + [(k, "r") for k in keys],
        key=lambda key: (utf16_key(key[0]), utf16_key(key[1])),
    )
    assert got == expected


def test_paging_with_small_pages_over_partition_boundaries(table):
    for pk in ("a", "b", "c"):
        for rk in ("1", "2", "3"):
            table.create_entity({"PartitionKey": pk, "RowKey": rk})
    pager = table.list_entities(results_per_page=2).by_page()
    pages = [keys_of(p) for p in pager]
    assert all(len(p) <= 2 for p in pages)
    assert [k for p in pages for k in p] == [(pk, rk) for pk in "abc" for rk in "123"]
    assert len(pages) >= 5
