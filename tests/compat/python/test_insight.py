"""tablestore's design insight seen from a Python application (issue 14).

The application's own traffic goes through the official SDK; ``GET /metrics`` is parsed by
the Prometheus project's parser (``prometheus_client.parser``), as a scraper would, and
``GET /_tablestore/insight`` is read as JSON. Both are signed with the account key (Shared
Key Lite over ``/{account}{path}``), as the server requires when authentication is on.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import urllib.request
from email.utils import formatdate

import pytest
from azure.data.tables import UpdateMode
from prometheus_client.parser import text_string_to_metric_families

from conftest import ACCOUNT_KEY, ACCOUNT_NAME, endpoint

pytestmark = pytest.mark.insight


def signed_get(path: str) -> tuple[int, str, str]:
    date = formatdate(usegmt=True)
    resource = f"/{ACCOUNT_NAME}{path.split('?')[0]}"
    string_to_sign = f"{date}\n{resource}"
    signature = base64.b64encode(
        hmac.new(base64.b64decode(ACCOUNT_KEY), string_to_sign.encode(), hashlib.sha256).digest()
    ).decode()
    request = urllib.request.Request(
        endpoint() + path,
        headers={"x-ms-date": date, "Authorization": f"SharedKeyLite {ACCOUNT_NAME}:{signature}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.headers.get("Content-Type", ""), response.read().decode()


def test_metrics_parse_and_count_the_applications_queries(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "1", "Color": "red"})
    table.create_entity({"PartitionKey": "p", "RowKey": "2", "Color": "blue"})
    assert len(list(table.query_entities("Color eq 'red'"))) == 1  # a table scan
    assert table.get_entity("p", "1")["Color"] == "red"  # a point read

    status, _, _ = signed_get("/_tablestore/insight?settle")
    assert status == 200
    status, content_type, text = signed_get("/metrics")
    assert status == 200
    assert content_type.startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(text)}

    for name in (
        "tablestore_requests",
        "tablestore_request_duration_seconds",
        "tablestore_queries",
        "tablestore_entities_examined",
        "tablestore_entities_returned",
        "tablestore_group_commit_flushes",
        "tablestore_store_size_bytes",
        "tablestore_store_logical_bytes",
        "tablestore_store_entities",
    ):
        assert name in families, f"{name} missing; got {sorted(families)}"
    # The store's size: at least the two entities above (other tests share the server).
    # Every store counts its data, PostgreSQL's included (exact up to 100,000 entities).
    assert families["tablestore_store_entities"].type == "gauge"
    entities = families["tablestore_store_entities"].samples[0].value
    logical = families["tablestore_store_logical_bytes"].samples[0].value
    assert entities >= 2 and logical > 2 * 20
    assert families["tablestore_store_size_bytes"].samples[0].value > 0
    assert families["tablestore_request_duration_seconds"].type == "histogram"
    assert families["tablestore_requests"].type == "counter"

    scans = [
        s.value
        for s in families["tablestore_queries"].samples
        if s.name == "tablestore_queries_total" and s.labels.get("class") == "table_scan"
    ]
    assert scans and scans[0] >= 1
    inserts = [
        s.value
        for s in families["tablestore_requests"].samples
        if s.labels == {"operation": "InsertEntity", "status_class": "2xx"}
    ]
    assert inserts and inserts[0] >= 2
    # Labels stay a bounded set: no table names or keys.
    for family in families.values():
        for sample in family.samples:
            assert table.table_name not in json.dumps(sample.labels)


def test_insight_lists_the_table_and_its_query_classes(table):
    for i in range(5):
        table.create_entity({"PartitionKey": "p", "RowKey": str(i), "N": i})
    assert len(list(table.query_entities("PartitionKey eq 'p' and RowKey eq '3'"))) == 1
    assert len(list(table.query_entities("PartitionKey eq 'p' and N gt 2"))) == 2

    status, content_type, body = signed_get("/_tablestore/insight?settle")
    assert status == 200 and content_type.startswith("application/json")
    tables = json.loads(body)["accounts"][ACCOUNT_NAME]["tables"]
    mine = next(t for t in tables if t["name"] == table.table_name)
    assert mine["queries"]["point query"] == 1
    assert mine["queries"]["partition scan"] == 1
    assert mine["inserts"] == 5
    assert mine["hot_partitions"][0]["partition_key"] == "p"
    # The whole server's data: the entities of every account's tables, and their size.
    store = json.loads(body)["store"]
    assert store["entities"] >= 5 and store["logicalBytes"] > 5 * 20


def test_an_applications_ordinary_traffic_raises_no_advice(table):
    """Precision: what an application does every day through the SDK raises no design
    advice. Change sets of 100 (the most a change set may hold, as the guide recommends for
    writes to one partition) round-robin into a few partitions, single inserts, upserts and
    merges, point reads, a range query, a whole partition read page by page, and deletes."""
    for b in range(4):
        for pk in ("tenant1", "tenant2", "tenant3"):
            table.submit_transaction(
                [("create", {"PartitionKey": pk, "RowKey": f"{b * 100 + r:06}", "N": r}) for r in range(100)]
            )
    for r in range(20):
        table.create_entity({"PartitionKey": "tenant4", "RowKey": f"{r:06}", "N": r})
        table.upsert_entity({"PartitionKey": "tenant4", "RowKey": f"{r:06}", "N": r, "Seen": True})
        table.update_entity({"PartitionKey": "tenant1", "RowKey": f"{r:06}", "Paid": True}, mode=UpdateMode.MERGE)
        assert table.get_entity("tenant2", f"{r * 7:06}")["N"] == (r * 7) % 100
    rows = list(table.query_entities("PartitionKey eq 'tenant3' and RowKey ge '000100' and RowKey lt '000150'"))
    assert len(rows) == 50
    for _ in range(2):
        pages = list(table.query_entities("PartitionKey eq 'tenant1'", results_per_page=100).by_page())
        assert sum(len(list(p)) for p in pages) == 400
    for r in range(10):
        table.delete_entity("tenant4", f"{r:06}")

    status, _, body = signed_get("/_tablestore/insight?settle")
    assert status == 200
    account = json.loads(body)["accounts"][ACCOUNT_NAME]
    mine = next(t for t in account["tables"] if t["name"] == table.table_name)
    assert mine["inserts"] == 1200 + 40  # the change sets, the inserts and the upserts
    assert mine["batch_operations"]["max"] == 100
    assert mine["advice"] == [], mine["advice"]
