"""Generate Shared Key and SAS fixtures with the official Python SDK (azure-data-tables).

Run inside a throwaway venv with `pip install azure-data-tables`:

    python tests/golden/auth/gen/python_gen.py > tests/golden/auth/python.json

No network is used: a capturing transport records each request exactly as the SDK would send
it (after the SDK's own signing policy) and then aborts the call.
"""

import datetime as dt
import json
import sys

import requests
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.pipeline.transport import HttpTransport
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    TableAccessPolicy,
    TableClient,
    TableServiceClient,
    TableSasPermissions,
    UpdateMode,
    generate_account_sas,
    generate_table_sas,
)
from azure.data.tables import __version__ as SDK_VERSION

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
PATH_STYLE = f"http://127.0.0.1:10002/{ACCOUNT}"
HOST_STYLE = f"https://{ACCOUNT}.table.core.windows.net"
START = dt.datetime(2024, 1, 1, 0, 0, 0, tzinfo=dt.timezone.utc)
EXPIRY = dt.datetime(2024, 1, 2, 0, 0, 0, tzinfo=dt.timezone.utc)
INSIDE = "2024-01-01T12:00:00Z"


class Captured(Exception):
    pass


class CapturingTransport(HttpTransport):
    def __init__(self):
        self.requests = []

    def __enter__(self):
        return self

    def __exit__(self, *args):
        pass

    def open(self):
        pass

    def close(self):
        pass

    def send(self, request, **kwargs):
        # The URL `requests` would put on the wire (it re-quotes some characters).
        wire_url = requests.Request(request.method, request.url).prepare().url
        self.requests.append(
            {
                "method": request.method,
                "signed_url": request.url,
                "url": wire_url,
                "headers": {k: v for k, v in request.headers.items()},
                "body": body_text(request),
            }
        )
        raise Captured()


def body_text(request):
    """The request body when it is XML (Set Table ACL), else None."""
    body = getattr(request, "body", None) or getattr(request, "data", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    if isinstance(body, str) and "SignedIdentifiers" in body:
        return body
    return None


def capture(fn):
    transport = CapturingTransport()
    try:
        fn(transport)
    except Captured:
        pass
    if len(transport.requests) != 1:
        raise RuntimeError(f"expected one request, got {len(transport.requests)}")
    return transport.requests[0]


def now_from(req):
    date = req["headers"].get("x-ms-date") or req["headers"].get("Date")
    if not date:
        return INSIDE
    return dt.datetime.strptime(date, "%a, %d %b %Y %H:%M:%S GMT").strftime("%Y-%m-%dT%H:%M:%SZ")


def key_cred():
    return AzureNamedKeyCredential(ACCOUNT, KEY)


def table(endpoint, cred, transport, name="MyTable"):
    return TableClient(endpoint, name, credential=cred, transport=transport, retry_total=0)


def service(endpoint, cred, transport):
    return TableServiceClient(endpoint, credential=cred, transport=transport, retry_total=0)


ENTITY = {"PartitionKey": "pk'1", "RowKey": "r k/2", "Value": 1}

# Operations driven through the SDK: (name, operation for authorization, table, function).
def shared_key_operations():
    ops = [
        ("create_table", "CreateTable", None, lambda e, c, t: service(e, c, t).create_table("MyTable")),
        ("list_tables_filter", "QueryTables", None,
         lambda e, c, t: list(service(e, c, t).query_tables("TableName eq 'MyTable'"))),
        ("delete_table", "DeleteTable", None, lambda e, c, t: service(e, c, t).delete_table("MyTable")),
        ("get_service_properties", "GetServiceProperties", None,
         lambda e, c, t: service(e, c, t).get_service_properties()),
        ("get_table_acl", "GetTableAcl", "MyTable", lambda e, c, t: table(e, c, t).get_table_access_policy()),
        ("set_table_acl", "SetTableAcl", "MyTable",
         lambda e, c, t: table(e, c, t).set_table_access_policy(
             {"id1": TableAccessPolicy(permission="r", expiry=EXPIRY, start=START)})),
        ("set_table_acl_partial", "SetTableAcl", "MyTable",
         lambda e, c, t: table(e, c, t).set_table_access_policy(
             {"empty": None, "perm-only": TableAccessPolicy(permission="r")})),
        ("insert_entity", "InsertEntity", "MyTable", lambda e, c, t: table(e, c, t).create_entity(ENTITY)),
        ("get_entity_quote_and_space", "GetEntity", "MyTable",
         lambda e, c, t: table(e, c, t).get_entity("pk'1", "r k/2")),
        ("get_entity_select", "GetEntity", "MyTable",
         lambda e, c, t: table(e, c, t).get_entity("a", "b", select=["Value"])),
        ("query_entities_filter", "QueryEntities", "MyTable",
         lambda e, c, t: list(table(e, c, t).query_entities("PartitionKey eq 'a' and Value gt 3", results_per_page=5))),
        ("upsert_merge", "InsertOrMergeEntity", "MyTable",
         lambda e, c, t: table(e, c, t).upsert_entity(ENTITY, mode=UpdateMode.MERGE)),
        ("update_replace", "UpdateEntity", "MyTable",
         lambda e, c, t: table(e, c, t).update_entity(ENTITY, mode=UpdateMode.REPLACE)),
        ("delete_entity", "DeleteEntity", "MyTable", lambda e, c, t: table(e, c, t).delete_entity("pk'1", "r k/2")),
        ("batch", "Batch", "MyTable",
         lambda e, c, t: table(e, c, t).submit_transaction([("create", ENTITY), ("upsert", {"PartitionKey": "pk'1", "RowKey": "x"})])),
    ]
    return ops


def case(name, req, endpoint, operation, table_name, principal, extra=None):
    out = {
        "name": name,
        "method": req["method"],
        "url": req["url"],
        "signed_url": req["signed_url"],
        "headers": req["headers"],
        "account": ACCOUNT,
        "path_style": endpoint == PATH_STYLE,
        "now": now_from(req) if principal == "SharedKey" else INSIDE,
        "principal": principal,
        "operation": operation,
        "table": table_name,
    }
    if req.get("body") is not None:
        out["body"] = req["body"]
    if extra:
        out.update(extra)
    return out


def main():
    cases = []
    for endpoint in (PATH_STYLE, HOST_STYLE):
        style = "path" if endpoint == PATH_STYLE else "host"
        for name, op, tbl, fn in shared_key_operations():
            req = capture(lambda t: fn(endpoint, key_cred(), t))
            cases.append(case(f"py_shared_key_{style}_{name}", req, endpoint, op, tbl, "SharedKey"))

    # Table (service) SAS tokens with fixed times.
    table_sas = [
        ("raud_range", dict(permission=TableSasPermissions(read=True, add=True, update=True, delete=True),
                            start=START, expiry=EXPIRY, start_pk="pk1", start_rk="a", end_pk="pk9", end_rk="z")),
        ("r_pk_only", dict(permission="r", expiry=EXPIRY, start_pk="pk1", end_pk="pk5")),
        ("au_https_ip", dict(permission="au", start=START, expiry=EXPIRY, protocol="https",
                             ip_address_or_range="10.0.0.1-10.0.0.9")),
        ("policy_only", dict(policy_id="policy1")),
        ("policy_with_expiry", dict(policy_id="policy2", expiry=EXPIRY)),
    ]
    tokens = []
    for name, kwargs in table_sas:
        token = generate_table_sas(key_cred(), "MyTable", **kwargs)
        tokens.append({"name": f"py_table_sas_{name}", "kind": "service", "token": token})
        # Use the token through the SDK as a client would.
        for endpoint in (PATH_STYLE, HOST_STYLE):
            style = "path" if endpoint == PATH_STYLE else "host"
            sas = AzureSasCredential(token)
            req = capture(lambda t: table(endpoint, sas, t).get_entity("pk2", "m"))
            cases.append(case(f"py_table_sas_{name}_{style}_get_entity", req, endpoint, "GetEntity", "MyTable", "Sas",
                              {"sas_kind": "service"}))
            req = capture(lambda t: table(endpoint, sas, t).upsert_entity({"PartitionKey": "pk2", "RowKey": "m"}))
            cases.append(case(f"py_table_sas_{name}_{style}_upsert", req, endpoint, "InsertOrMergeEntity", "MyTable",
                              "Sas", {"sas_kind": "service"}))

    account_sas = [
        ("all_sco", dict(resource_types=ResourceTypes(service=True, container=True, object=True),
                         permission=AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True,
                                                          create=True, update=True, process=True),
                         expiry=EXPIRY, start=START)),
        ("o_r", dict(resource_types=ResourceTypes(object=True), permission="r", expiry=EXPIRY)),
        ("c_l_https", dict(resource_types=ResourceTypes(container=True), permission="l", expiry=EXPIRY,
                           start=START, protocol="https", ip_address_or_range="192.168.0.10")),
    ]
    for name, kwargs in account_sas:
        rt = kwargs.pop("resource_types")
        perm = kwargs.pop("permission")
        expiry = kwargs.pop("expiry")
        token = generate_account_sas(key_cred(), rt, perm, expiry, **kwargs)
        tokens.append({"name": f"py_account_sas_{name}", "kind": "account", "token": token})
        for endpoint in (PATH_STYLE, HOST_STYLE):
            style = "path" if endpoint == PATH_STYLE else "host"
            sas = AzureSasCredential(token)
            req = capture(lambda t: list(service(endpoint, sas, t).list_tables()))
            cases.append(case(f"py_account_sas_{name}_{style}_list_tables", req, endpoint, "QueryTables", None, "Sas",
                              {"sas_kind": "account"}))
            req = capture(lambda t: table(endpoint, sas, t).get_entity("pk2", "m"))
            cases.append(case(f"py_account_sas_{name}_{style}_get_entity", req, endpoint, "GetEntity", "MyTable",
                              "Sas", {"sas_kind": "account"}))

    json.dump(
        {
            "generator": f"azure-data-tables {SDK_VERSION} (Python {sys.version.split()[0]})",
            "account_key": KEY,
            "sas_times": {"start": "2024-01-01T00:00:00Z", "expiry": "2024-01-02T00:00:00Z", "inside": INSIDE},
            "tokens": tokens,
            "cases": cases,
        },
        sys.stdout,
        indent=1,
        sort_keys=False,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
