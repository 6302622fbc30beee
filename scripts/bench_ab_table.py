#!/usr/bin/env python3
"""The table of a scripts/bench-ab.sh run: OUT_DIR holds old-N/, new-N/, floor-N/ and azurite/
(each a scripts/bench-compare.sh output folder). Rates are the median over the rounds; each
ratio is oriented so that above 1 means the new binary did better (for CPU, RSS and disk:
less).

    bench_ab_table.py OUT_DIR [DELETE_POOL]
"""

import glob
import json
import os
import statistics
import sys

ORDER = [
    "insert",
    "point-read",
    "upsert",
    "merge",
    "delete",
    "batch-insert",
    "range-query",
    "scan-filter",
    "bulk-load",
]
TARGETS = {  # (against the floor, against Azurite)
    "point-read": (0.6, 20),
    "insert": (0.45, 20),
    "upsert": (0.45, 20),
    "merge": (0.45, 20),
    "delete": (0.45, 20),
    "batch-insert": (0.35, 20),
    "bulk-load": (None, 20),
    "range-query": (None, 40),
    "scan-filter": (None, 4),
}


def runs(out_dir, prefix, name):
    out = []
    for d in sorted(glob.glob(os.path.join(out_dir, f"{prefix}*"))):
        path = os.path.join(d, f"{name}.json")
        if os.path.exists(path):
            with open(path) as f:
                run = json.load(f)
            disk = None
            try:
                with open(os.path.join(d, f"{name}.disk-bytes")) as f:
                    disk = int(f.read().strip() or 0)
            except (OSError, ValueError):
                pass
            out.append((run, disk))
    return out


def rate(w):
    return w["entities_per_s"] if w["name"] in ("batch-insert", "bulk-load") else w["ops_per_s"]


def per_workload(run_list):
    """workload -> list over rounds of (rate, cpu µs per op, rss peak KiB)."""
    out = {}
    for run, _ in run_list:
        for w in run["workloads"]:
            server = w.get("server") or {}
            out.setdefault(w["name"], []).append(
                (rate(w), server.get("cpu_us_per_op"), server.get("rss_peak_kib"))
            )
    return out


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def live_entities(run, pool):
    n = (run.get("preload") or {}).get("entities", 0)
    for w in run["workloads"]:
        if w["name"] == "insert":
            n += w["ops"]
        elif w["name"] in ("batch-insert", "bulk-load"):
            n += w["entities"]
        elif w["name"] == "delete":
            n += max(pool - w["ops"], 0)
    return n


def peak_rss(run_list):
    peaks = []
    for run, _ in run_list:
        vals = [(w.get("server") or {}).get("rss_peak_kib") for w in run["workloads"]]
        vals += [(w.get("server") or {}).get("vmhwm_kib") for w in run["workloads"]]
        vals = [v for v in vals if v]
        if vals:
            peaks.append(max(vals) / 1024)
    return peaks


def fmt(v, digits=0):
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def main():
    out_dir = sys.argv[1]
    pool = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
    old, new = runs(out_dir, "old-", "tablestore"), runs(out_dir, "new-", "tablestore")
    floor, azurite = runs(out_dir, "floor-", "floor"), runs(out_dir, "azurite", "azurite")
    o, n, f, a = (per_workload(x) for x in (old, new, floor, azurite))
    print(f"## Before/after ({os.path.basename(out_dir.rstrip('/'))}): {len(new)} rounds\n")
    print("Median rate over the rounds (ops/s; entities/s for `$batch` and the bulk load); CPU is")
    print("the server's per operation (per `$batch` of 100, per bulk `$batch`).\n")
    print("| workload | old | new | new/old | floor | new/floor | Azurite | new/Azurite | CPU µs old → new (floor) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in ORDER:
        if w not in n:
            continue
        ro, rn = median(r for r, _, _ in o.get(w, [])), median(r for r, _, _ in n[w])
        rf, ra = median(r for r, _, _ in f.get(w, [])), median(r for r, _, _ in a.get(w, []))
        co, cn = median(c for _, c, _ in o.get(w, [])), median(c for _, c, _ in n[w])
        cf = median(c for _, c, _ in f.get(w, []))
        t_floor, t_az = TARGETS.get(w, (None, None))

        def ratio(x, y, target=None):
            if not x or not y:
                return "-"
            r = x / y
            mark = "" if target is None else (" ✓" if r >= target else f" (target {target})")
            return f"{r:.2f}×{mark}"

        print(
            f"| {w} | {fmt(ro)} | {fmt(rn)} | {ratio(rn, ro)} | {fmt(rf)} | {ratio(rn, rf, t_floor)} "
            f"| {fmt(ra)} | {ratio(rn, ra, t_az)} | {fmt(co)} → {fmt(cn)} ({fmt(cf)}) |"
        )
    print()
    print("| resource | old | new | Azurite |")
    print("|---|---:|---:|---:|")
    rows = [("peak RSS, MiB (highest over the workloads, each round)", peak_rss)]
    for name, fn in rows:
        cells = [", ".join(fmt(x, 1) for x in fn(r)) or "-" for r in (old, new, azurite)]
        print(f"| {name} | " + " | ".join(cells) + " |")

    def per_entity(run_list):
        vals = []
        for run, disk in run_list:
            live = live_entities(run, pool)
            if disk and live:
                vals.append(f"{disk / live:,.0f} ({disk / 1048576:,.1f} MiB, {live:,} entities)")
        return "; ".join(vals) or "-"

    print(
        "| data folder after stop, bytes per live entity | "
        + " | ".join(per_entity(r) for r in (old, new, azurite))
        + " |"
    )


if __name__ == "__main__":
    main()
