#!/usr/bin/env python3
"""The Azure CLI (`az storage table|entity|cors|logging|metrics`) scripted against a running
tablestore, as a user would: every command gets the connection string of the local server
and nothing else, and each step checks what the CLI printed (or that it failed, and why).

Usage: azure_cli_scenario.py AZ ENDPOINT
  AZ        the az executable (from the cached virtual environment)
  ENDPOINT  http://127.0.0.1:<port> of the server (the dev account devstoreaccount1)

Prints one line per step and ends with "azure cli: N passed, N failed". Exits 1 on a failure.
The caller (scripts/ci/azure-cli.sh) sets the environment that keeps the CLI off the internet.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class StepFailed(Exception):
    pass


class Cli:
    def __init__(self, az: str, endpoint: str) -> None:
        self.az = az
        self.table_endpoint = f"{endpoint.rstrip('/')}/{ACCOUNT}"
        self.conn = (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"TableEndpoint={self.table_endpoint};"
        )

    def run(self, *args: str, auth: str = "conn", sas: str = "") -> subprocess.CompletedProcess:
        cmd = [self.az, *args, "--only-show-errors", "--output", "json"]
        if auth == "conn":
            cmd += ["--connection-string", self.conn]
        elif auth == "sas":
            cmd += ["--account-name", ACCOUNT, "--table-endpoint", self.table_endpoint, "--sas-token", sas]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)

    def ok(self, *args: str, **kw):
        """Runs a command that must succeed; returns its JSON output (None when it prints none)."""
        p = self.run(*args, **kw)
        if p.returncode != 0:
            raise StepFailed(f"`az {' '.join(args[:3])}` exited {p.returncode}: {p.stderr.strip()[-600:]}")
        out = p.stdout.strip()
        return json.loads(out) if out else None

    def fails(self, *args: str, expect: str, **kw) -> str:
        """Runs a command that must fail, with `expect` in its error output."""
        p = self.run(*args, **kw)
        if p.returncode == 0:
            raise StepFailed(f"`az {' '.join(args[:3])}` succeeded; expected a failure with {expect!r}")
        if expect not in p.stderr:
            raise StepFailed(f"`az {' '.join(args[:3])}` failed without {expect!r}: {p.stderr.strip()[-600:]}")
        return p.stderr


def check(cond: bool, what: str) -> None:
    if not cond:
        raise StepFailed(what)


def custom(entity: dict) -> dict:
    """The entity's own properties: no keys, timestamp, metadata or type annotations."""
    return {
        k: v
        for k, v in entity.items()
        if k not in ("PartitionKey", "RowKey", "Timestamp", "etag") and "@odata" not in k and not k.startswith("odata.")
    }


def scenario(cli: Cli):
    """Yields (name, callable) steps; they share state through `s`."""
    s: dict = {"table": "azcli" + uuid.uuid4().hex[:12]}
    t = s["table"]
    key = ["--partition-key", "p", "--row-key", "r"]

    def create_table():
        out = cli.ok("storage", "table", "create", "--name", t)
        check(out == {"created": True}, f"create printed {out}")

    def create_table_again():
        cli.fails("storage", "table", "create", "--name", t, "--fail-on-exist", expect="TableAlreadyExists")

    def table_exists_and_listed():
        check(cli.ok("storage", "table", "exists", "--name", t) == {"exists": True}, "exists is not true")
        names = [x["name"] for x in cli.ok("storage", "table", "list")]
        check(t in names, f"{t} not in the listing {names}")

    def typed_insert():
        cli.ok(
            "storage", "entity", "insert", "--table-name", t, "--entity",
            "PartitionKey=p", "RowKey=r", "Name=Ada",
            "Count=3", "Count@odata.type=Edm.Int32",
            "Score=1.5", "Score@odata.type=Edm.Double",
            "Big=1099511627776", "Big@odata.type=Edm.Int64",
            "When=2024-01-02T03:04:05Z", "When@odata.type=Edm.DateTime",
        )

    def boolean_insert():
        # The CLI sends every value as a string, the type beside it: "Ok":"true",
        # "Ok@odata.type":"Edm.Boolean" (azure-cli #22209). Azure stores a boolean.
        cli.ok("storage", "entity", "insert", "--table-name", t, "--entity", "PartitionKey=b", "RowKey=1",
               "Ok=true", "Ok@odata.type=Edm.Boolean", "No=False", "No@odata.type=Edm.Boolean")
        e = cli.ok("storage", "entity", "show", "--table-name", t, "--partition-key", "b", "--row-key", "1")
        check(e["Ok"] is True and e["No"] is False, f"booleans came back as {e.get('Ok')!r}, {e.get('No')!r}")

    def insert_duplicate():
        cli.fails("storage", "entity", "insert", "--table-name", t, "--entity", "PartitionKey=p", "RowKey=r",
                  expect="The specified entity already exists")

    def show_typed():
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key)
        check(e["Name"] == "Ada" and e["Count"] == 3 and e["Score"] == 1.5, f"show printed {e}")
        check(e["Big"] == {"edm_type": "Edm.Int64", "value": 1099511627776}, f"Int64 came back as {e['Big']!r}")
        check(str(e["When"]).startswith("2024-01-02T03:04:05"), f"DateTime came back as {e['When']!r}")
        s["etag"] = e["etag"]

    def show_select():
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key, "--select", "Name", "Count")
        check(custom(e) == {"Name": "Ada", "Count": 3}, f"--select printed {custom(e)}")

    def merge():
        cli.ok("storage", "entity", "merge", "--table-name", t, "--entity", "PartitionKey=p", "RowKey=r", "Extra=x")
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key)
        check(e["Extra"] == "x" and e["Name"] == "Ada", f"after merge: {custom(e)}")
        check(e["etag"] != s["etag"], "merge did not change the ETag")

    def stale_if_match():
        cli.fails("storage", "entity", "replace", "--table-name", t, "--entity", "PartitionKey=p", "RowKey=r",
                  "Name=Stale", "--if-match", s["etag"], expect="UpdateConditionNotSatisfied")
        cli.fails("storage", "entity", "merge", "--table-name", t, "--entity", "PartitionKey=p", "RowKey=r",
                  "Name=Stale", "--if-match", s["etag"], expect="UpdateConditionNotSatisfied")
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key)
        check(e["Name"] == "Ada", "a stale If-Match changed the entity")
        s["etag"] = e["etag"]

    def replace_current_etag():
        cli.ok("storage", "entity", "replace", "--table-name", t, "--entity", "PartitionKey=p", "RowKey=r",
               "Name=Bea", "--if-match", s["etag"])
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key)
        check(custom(e) == {"Name": "Bea"}, f"after replace: {custom(e)}")

    def upsert_merge():
        cli.ok("storage", "entity", "insert", "--table-name", t, "--if-exists", "merge", "--entity",
               "PartitionKey=p", "RowKey=r", "Extra=y")
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key)
        check(custom(e) == {"Name": "Bea", "Extra": "y"}, f"after insert --if-exists merge: {custom(e)}")

    def upsert_replace():
        cli.ok("storage", "entity", "insert", "--table-name", t, "--if-exists", "replace", "--entity",
               "PartitionKey=p", "RowKey=r", "Only=z")
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key)
        check(custom(e) == {"Only": "z"}, f"after insert --if-exists replace: {custom(e)}")

    def insert_rows():
        for i in range(3):
            cli.ok("storage", "entity", "insert", "--table-name", t, "--entity", "PartitionKey=q", f"RowKey={i:02d}",
                   f"n={i}", "n@odata.type=Edm.Int32")

    def query_filter_select():
        out = cli.ok("storage", "entity", "query", "--table-name", t, "--filter", "PartitionKey eq 'q' and n ge 1",
                     "--select", "n")
        items = out["items"]
        check([custom(e) for e in items] == [{"n": 1}, {"n": 2}], f"filter/select printed {items}")
        check("RowKey" not in items[0], "--select n still printed RowKey")

    def query_top_marker():
        flt = ["--filter", "PartitionKey eq 'q'"]
        first = cli.ok("storage", "entity", "query", "--table-name", t, *flt, "--num-results", "2")
        check([e["RowKey"] for e in first["items"]] == ["00", "01"], f"page 1: {first['items']}")
        marker = first.get("nextMarker")
        check(bool(marker), f"no nextMarker after a full page: {first}")
        s["pages"] = 1
        rows = [e["RowKey"] for e in first["items"]]
        while marker:
            args = ["--marker", f"nextpartitionkey={marker['nextpartitionkey']}"]
            if marker.get("nextrowkey"):
                args.append(f"nextrowkey={marker['nextrowkey']}")
            page = cli.ok("storage", "entity", "query", "--table-name", t, *flt, "--num-results", "2", *args)
            rows += [e["RowKey"] for e in page["items"]]
            marker = page.get("nextMarker")
            s["pages"] += 1
            check(s["pages"] <= 5, "the marker never ends")
        check(rows == ["00", "01", "02"] and s["pages"] == 2, f"{s['pages']} pages gave {rows}")

    def delete_entity():
        cli.ok("storage", "entity", "delete", "--table-name", t, "--partition-key", "q", "--row-key", "02")
        cli.fails("storage", "entity", "show", "--table-name", t, "--partition-key", "q", "--row-key", "02",
                  expect="ResourceNotFound")

    def policies():
        expiry = (datetime.now(timezone.utc) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%MZ")
        cli.ok("storage", "table", "policy", "create", "--table-name", t, "--name", "readers",
               "--permissions", "r", "--expiry", expiry)
        cli.ok("storage", "table", "policy", "create", "--table-name", t, "--name", "writers",
               "--permissions", "raud", "--expiry", expiry)
        listed = cli.ok("storage", "table", "policy", "list", "--table-name", t)
        check(sorted(listed) == ["readers", "writers"], f"policy list printed {listed}")
        shown = cli.ok("storage", "table", "policy", "show", "--table-name", t, "--name", "readers")
        check(shown["permission"] == "r", f"policy show printed {shown}")
        cli.ok("storage", "table", "policy", "update", "--table-name", t, "--name", "writers", "--permissions", "ra")
        shown = cli.ok("storage", "table", "policy", "show", "--table-name", t, "--name", "writers")
        check(shown["permission"] == "ra", f"after update: {shown}")
        cli.ok("storage", "table", "policy", "delete", "--table-name", t, "--name", "writers")
        check(sorted(cli.ok("storage", "table", "policy", "list", "--table-name", t)) == ["readers"],
              "policy delete left writers")

    def read_only_sas():
        expiry = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%MZ")
        sas = cli.ok("storage", "table", "generate-sas", "--name", t, "--permissions", "r", "--expiry", expiry)
        check(isinstance(sas, str) and "sig=" in sas, f"generate-sas printed {sas!r}")
        check(parse_qs(sas).get("sp") == ["r"], f"the SAS is not read-only: {sas}")
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key, auth="sas", sas=sas)
        check(custom(e) == {"Only": "z"}, f"read through the SAS: {custom(e)}")
        # The CLI prints only the status here ("Operation returned an invalid status 'Forbidden'").
        cli.fails("storage", "entity", "insert", "--table-name", t, "--entity", "PartitionKey=p", "RowKey=sas",
                  auth="sas", sas=sas, expect="Forbidden")
        policy_sas = cli.ok("storage", "table", "generate-sas", "--name", t, "--policy-name", "readers")
        check(parse_qs(policy_sas).get("si") == ["readers"], f"policy SAS printed {policy_sas!r}")
        e = cli.ok("storage", "entity", "show", "--table-name", t, *key, auth="sas", sas=policy_sas)
        check(custom(e) == {"Only": "z"}, "read through the policy SAS failed")

    def cors():
        cli.ok("storage", "cors", "clear", "--services", "t")
        cli.ok("storage", "cors", "add", "--services", "t", "--methods", "GET", "PUT",
               "--origins", "https://app.example", "--allowed-headers", "x-ms-*", "--max-age", "60")
        rules = cli.ok("storage", "cors", "list", "--services", "t")
        check(len(rules) == 1, f"cors list printed {rules}")
        rule = rules[0]
        check(rule["Service"] == "table", f"cors rule service {rule}")
        check(rule["AllowedOrigins"] == "https://app.example" and rule["MaxAgeInSeconds"] == 60, f"cors rule {rule}")
        check(sorted(m.strip() for m in rule["AllowedMethods"].split(",")) == ["GET", "PUT"], f"cors methods {rule}")
        cli.ok("storage", "cors", "clear", "--services", "t")
        check(cli.ok("storage", "cors", "list", "--services", "t") == [], "cors clear left rules")

    def logging_metrics_show():
        logging = cli.ok("storage", "logging", "show", "--services", "t")
        check("table" in logging, f"logging show printed {logging}")
        check(set(logging["table"]) >= {"delete", "read", "write", "version"}, f"logging show: {logging}")
        metrics = cli.ok("storage", "metrics", "show", "--services", "t")
        check("table" in metrics and "hour" in metrics["table"] and "minute" in metrics["table"],
              f"metrics show printed {metrics}")

    def delete_table():
        check(cli.ok("storage", "table", "delete", "--name", t) == {"deleted": True}, "delete did not print deleted")
        check(cli.ok("storage", "table", "exists", "--name", t) == {"exists": False}, "the table still exists")

    return [
        ("table create", create_table),
        ("table create again (exists)", create_table_again),
        ("table exists / list", table_exists_and_listed),
        ("entity insert, typed (Edm.Int32/Double/Int64/DateTime)", typed_insert),
        ("entity insert, Edm.Boolean sent as a string", boolean_insert),
        ("entity insert duplicate -> 409 (entity already exists)", insert_duplicate),
        ("entity show: typed values", show_typed),
        ("entity show --select", show_select),
        ("entity merge", merge),
        ("stale --if-match -> UpdateConditionNotSatisfied", stale_if_match),
        ("entity replace --if-match current", replace_current_etag),
        ("entity insert --if-exists merge", upsert_merge),
        ("entity insert --if-exists replace", upsert_replace),
        ("entity insert x3", insert_rows),
        ("entity query --filter --select", query_filter_select),
        ("entity query --num-results --marker", query_top_marker),
        ("entity delete", delete_entity),
        ("table policy create/list/show/update/delete", policies),
        ("table generate-sas (read-only, and by policy)", read_only_sas),
        ("cors add/list/clear", cors),
        ("logging show / metrics show", logging_metrics_show),
        ("table delete", delete_table),
    ]


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: azure_cli_scenario.py AZ ENDPOINT (see scripts/ci/azure-cli.sh)", file=sys.stderr)
        return 2
    cli = Cli(sys.argv[1], sys.argv[2])
    passed = failed = 0
    for name, step in scenario(cli):
        start = time.monotonic()
        try:
            step()
        except (StepFailed, KeyError, TypeError, ValueError, subprocess.TimeoutExpired) as e:
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            if name == "table create":
                break  # nothing later can run without the table
        else:
            passed += 1
            print(f"ok   {name} ({time.monotonic() - start:.1f}s)", flush=True)
    print(f"azure cli: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
