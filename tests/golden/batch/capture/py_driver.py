#!/usr/bin/env python3
"""Drives azure-data-tables `submit_transaction` against the capture server.

Usage: py_driver.py <port>.  Every case is recorded as `py_<case>`.
"""
import sys
import urllib.request
import uuid
from datetime import datetime, timezone

from azure.core import MatchConditions
from azure.data.tables import EdmType, EntityProperty, TableClient, UpdateMode

PORT = int(sys.argv[1])
BASE = f"http://127.0.0.1:{PORT}"
CONN = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
    "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
    f"TableEndpoint={BASE}/devstoreaccount1;"
)
ETAG = "W/\"datetime'2024-01-01T00%3A00%3A00.0000000Z'\""
client = TableClient.from_connection_string(CONN, table_name="batchtable")


def case(name, ops):
    urllib.request.urlopen(f"{BASE}/__name?case=py_{name}").read()
    client.submit_transaction(ops)


def e(rk, **props):
    return {"PartitionKey": "pk1", "RowKey": rk, **props}


typed = e(
    "typed",
    Name="Ada",
    Age=36,
    Big=EntityProperty(2**40, EdmType.INT64),
    Ratio=1.5,
    Active=True,
    When=datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
    Id=uuid.UUID("11111111-2222-3333-4444-555555555555"),
    Blob=b"\x00\x01\xfe",
)

case("create", [("create", e("r1", Value=1)), ("create", typed)])
case("update_replace", [("update", e("r1", Value=2), {"mode": UpdateMode.REPLACE})])
case("update_merge", [("update", e("r1", Value=3), {"mode": UpdateMode.MERGE})])
case(
    "update_etag",
    [
        ("update", e("r1", Value=4), {"mode": UpdateMode.REPLACE, "etag": ETAG, "match_condition": MatchConditions.IfNotModified}),
        ("update", e("r2", Value=5), {"mode": UpdateMode.MERGE, "etag": ETAG, "match_condition": MatchConditions.IfNotModified}),
    ],
)
case("upsert_replace", [("upsert", e("r1", Value=6), {"mode": UpdateMode.REPLACE})])
case("upsert_merge", [("upsert", e("r1", Value=7), {"mode": UpdateMode.MERGE})])
case("delete", [("delete", e("r1"))])
case("delete_etag", [("delete", e("r1"), {"etag": ETAG, "match_condition": MatchConditions.IfNotModified})])
case(
    "mixed",
    [
        ("create", e("a'b c/\u00fc", Value=1)),
        ("update", e("r2", Value=2), {"mode": UpdateMode.MERGE}),
        ("upsert", e("r3", Value=3), {"mode": UpdateMode.REPLACE}),
        ("upsert", e("r4", Value=4), {"mode": UpdateMode.MERGE}),
        ("delete", e("a'b c/\u00fcd")),
    ],
)
print("py: done")
