#!/usr/bin/env python3
"""The request path's budget tables from a scripts/profile-request-path.sh run.

    request_path_budget.py OUT_DIR LABEL [LABEL ...]

Reads, per label (and for `floor` when present): the callgrind dumps of
OUT_DIR/LABEL.callgrind/ (one file per thread per workload, as --separate-threads=yes and
--phase-hook's dumps write them), the benchmark's JSON results beside them (requests counted)
and OUT_DIR/LABEL.native.cpu with OUT_DIR/LABEL.native.*.json (the server's utime and stime
around each measured phase, and its requests). Prints markdown: per label, each stage's
instructions and µs per request for every workload; the server against the floor; and, with
two labels or more, each label against the first.

A function's cost is inclusive (itself and everything it calls), summed over the threads;
stages are differences of such costs, so that every instruction is counted once:

- connection + HTTP parse: the connection task (hyper's parse, reads, keep-alive) outside
  the handler and the response write;
- admit, decode, execute, encode: their entry functions (`intake::admit`, `decode::decode`,
  `exec::execute`, `encode::encode`), execute with the store's own threads (the group
  commit's flusher, sled's log writers) added;
- response write: hyper's `write_head` and `poll_flush`;
- layers: everything in the handler outside those four steps (routing, the request log and
  insight's report, CORS, the realism hook, side doors) and the insight thread;
- runtime and other threads: the rest (tokio's scheduler, timers, the RAM tier's loader);
- kernel: the native run's system time (TCP, futex wake-ups, fsync), not counted by callgrind.
"""

import glob
import json
import os
import re
import sys
from collections import defaultdict

WORKLOADS = ["point-read", "insert", "upsert", "merge", "delete", "batch-insert"]
TITLES = {
    "point-read": "point read",
    "insert": "insert",
    "upsert": "upsert",
    "merge": "merge",
    "delete": "delete",
    "batch-insert": "`$batch` of 100",
}

# Entry functions, by their demangled names as callgrind records them (any one of each list;
# old and new binaries may name a step differently).
CONN = ["tablestore::server::connections::serve_connection::{{closure}}"]
HANDLER = [
    "<tablestore::server::connections::CatchPanic<F> as core::future::future::Future>::poll"
]
ADMIT = ["tablestore::server::intake::admit::{{closure}}"]
AUTH = ["tablestore::auth::authenticate_with"]
DECODE = ["tablestore::server::decode::decode"]
EXECUTE = ["tablestore::exec::execute::{{closure}}"]
ENCODE = ["tablestore::server::encode::encode"]
PARSE = ["<hyper::proto::h1::role::Server as hyper::proto::h1::Http1Transaction>::parse"]
WRITE = [
    "hyper::proto::h1::conn::Conn<I,B,T>::write_head",
    "hyper::proto::h1::io::Buffered<T,B>::poll_flush",
]
# Parts shown under their stage (already inside it).
PARTS = {
    "table lookup": [
        "tablestore::exec::entities::table_info::{{closure}}",
        "tablestore::batch::resolve_table::{{closure}}",
    ],
    "store read or commit": [
        "<tablestore::store::KvStore<B> as tablestore::store::Store>::get_entity::{{closure}}",
        "<tablestore::store::KvStore<B> as tablestore::store::Store>::commit::{{closure}}",
    ],
    "JSON entity decode": ["tablestore::protocol::json::decode_entity_as"],
    "`$batch` multipart decode": ["tablestore::protocol::batch::decode::decode_batch"],
    "LZ4 of values": ["tablestore::store::value_lz4::encode", "tablestore::store::value_lz4::decode"],
    "sled (tree get/insert/remove)": [
        "sled::tree::Tree::get",
        "sled::tree::Tree::insert",
        "sled::tree::Tree::remove",
    ],
    "JSON entity encode": [
        "tablestore::protocol::json::encode_entity",
        "tablestore::protocol::batch::encode::encode_changeset_response",
    ],
}


def parse_callgrind(path):
    """Self cost per function and inclusive cost of calls per (caller, callee), from one
    callgrind output file (Ir only). Returns (total, self_cost, call_cost, trigger)."""
    names = {}
    self_cost = defaultdict(int)
    call_cost = defaultdict(int)
    fn = None
    callee = None
    pending_call = False
    total = 0
    trigger = None

    def name_of(spec):
        m = re.match(r"\((\d+)\)(?: (.*))?$", spec)
        if not m:
            return spec
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), spec)

    with open(path, errors="replace") as f:
        for line in f:
            if pending_call:
                pending_call = False
                parts = line.split()
                if len(parts) >= 2 and fn is not None:
                    if callee != fn:
                        call_cost[(fn, callee)] += int(parts[1])
                continue
            c = line[0] if line else ""
            if c.isdigit() or c in "+-*":
                parts = line.split()
                if len(parts) >= 2 and fn is not None:
                    self_cost[fn] += int(parts[1])
                continue
            if line.startswith("fn="):
                fn = name_of(line[3:].strip())
            elif line.startswith("cfn="):
                callee = name_of(line[4:].strip())
            elif line.startswith("calls="):
                pending_call = True
            elif line.startswith("summary:") or line.startswith("totals:"):
                total = max(total, int(line.split()[1]))
            elif line.startswith("desc: Trigger:"):
                m = re.search(r"dump (\S+)", line)
                trigger = m.group(1) if m else None
    return total, self_cost, call_cost, trigger


class Thread:
    def __init__(self, path):
        self.total, self_cost, call_cost, self.trigger = parse_callgrind(path)
        self.inclusive = defaultdict(int, self_cost)
        for (caller, _callee), cost in call_cost.items():
            self.inclusive[caller] += cost

    def cost(self, names):
        return sum(self.inclusive.get(n, 0) for n in names)

    def has(self, name):
        return name in self.inclusive


def callgrind_workloads(directory):
    """Per workload, the list of its threads' profiles."""
    out = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(directory, "cg.out*"))):
        if not re.search(r"\.\d+-\d+$", path):
            continue  # the final dump at exit, outside any measured phase
        t = Thread(path)
        if t.trigger and t.total:
            out[t.trigger].append(t)
    return out


def bench_ops(paths):
    """Requests (successful and failed) per workload from benchmark JSON results."""
    ops = {}
    for p in paths:
        try:
            with open(p) as f:
                run = json.load(f)
        except (OSError, ValueError):
            continue
        for w in run.get("workloads", []):
            ops[w["name"]] = w.get("ops", 0) + w.get("failed", 0)
    return ops


def native_cpu(out_dir, label):
    """Per workload: (user µs, system µs) per request in the native run."""
    path = os.path.join(out_dir, f"{label}.native.cpu")
    ops = bench_ops(glob.glob(os.path.join(out_dir, f"{label}.native.*.json")))
    marks = {}
    try:
        with open(path) as f:
            for line in f:
                edge, w, utime, stime = line.split()
                marks[(edge, w)] = (int(utime), int(stime))
    except OSError:
        return {}
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    out = {}
    for w, n in ops.items():
        if ("start", w) in marks and ("end", w) in marks and n:
            (u0, s0), (u1, s1) = marks[("start", w)], marks[("end", w)]
            out[w] = ((u1 - u0) * tick_us / n, (s1 - s0) * tick_us / n)
    return out


def stages(threads, requests):
    """Instructions per request of each stage (and the parts), for one workload."""
    workers = [t for t in threads if t.has(CONN[0])]
    insight = [t for t in threads if t not in workers and t.has("tablestore::insight::count_one")]
    store = [
        t
        for t in threads
        if t not in workers
        and t not in insight
        and any(n.startswith(("sled::", "tablestore::store::")) for n in t.inclusive)
    ]
    total = sum(t.total for t in threads)

    def w(names):
        return sum(t.cost(names) for t in workers)

    conn, handler = w(CONN), w(HANDLER)
    admit, decode, execute, encode = w(ADMIT), w(DECODE), w(EXECUTE), w(ENCODE)
    dispatch_steps = admit + decode + execute + encode
    write = w(WRITE)
    store_threads = sum(t.total for t in store)
    insight_thread = sum(t.total for t in insight)
    rows = {
        "connection + HTTP parse": conn - handler - write,
        "admit (account, operation, auth)": admit,
        "decode": decode,
        "execute (table, store)": execute + store_threads,
        "encode": encode,
        "response write": write,
        "layers (routing, log, insight, CORS, realism)": handler - dispatch_steps + insight_thread,
    }
    rows["runtime and other threads"] = total - sum(rows.values())
    parts = {
        "auth (Shared Key)": w(AUTH),
        "hyper's parse": w(PARSE),
        "store threads (group commit, sled's log)": store_threads,
        "insight thread": insight_thread,
    }
    for name, names in PARTS.items():
        parts[name] = sum(t.cost(names) for t in threads)
    per = lambda v: v / requests  # noqa: E731
    return per(total), {k: per(v) for k, v in rows.items()}, {k: per(v) for k, v in parts.items()}


def load(out_dir, label):
    cg_dir = os.path.join(out_dir, f"{label}.callgrind")
    threads = callgrind_workloads(cg_dir)
    ops = bench_ops(glob.glob(os.path.join(cg_dir, "bench.*.json")))
    native = native_cpu(out_dir, label)
    result = {}
    for wl in WORKLOADS:
        entry = {"native": native.get(wl)}
        if threads.get(wl) and ops.get(wl):
            entry["instr"], entry["rows"], entry["parts"] = stages(threads[wl], ops[wl])
        result[wl] = entry
    return result


def us(entry, instr):
    """µs of user CPU for `instr` instructions, at the workload's native user µs per instruction."""
    if not entry.get("native") or not entry.get("instr"):
        return None
    return instr * entry["native"][0] / entry["instr"]


def fmt_us(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def fmt_k(v):
    return f"{v / 1000:,.1f}k"


def budget_table(label, data):
    wls = [w for w in WORKLOADS if data[w].get("instr")]
    print(f"### {label}: server CPU per request by stage\n")
    print("µs of CPU per request (thousands of instructions per request in brackets).\n")
    print("| stage | " + " | ".join(TITLES[w] for w in wls) + " |")
    print("|---|" + "---:|" * len(wls))
    row_names = list(data[wls[0]]["rows"].keys()) if wls else []
    for r in row_names:
        cells = []
        for w in wls:
            v = data[w]["rows"][r]
            cells.append(f"{fmt_us(us(data[w], v))} ({fmt_k(v)})")
        print(f"| {r} | " + " | ".join(cells) + " |")
    cells = []
    for w in wls:
        e = data[w]
        cells.append(f"{fmt_us(e['native'][0]) if e.get('native') else '-'} ({fmt_k(e['instr'])})")
    print("| **user-space total** | " + " | ".join(cells) + " |")
    cells = [fmt_us(data[w]["native"][1]) if data[w].get("native") else "-" for w in wls]
    print("| kernel (system time: TCP, futex, fsync) | " + " | ".join(cells) + " |")
    cells = [fmt_us(sum(data[w]["native"])) if data[w].get("native") else "-" for w in wls]
    print("| **server CPU per request** | " + " | ".join(cells) + " |")
    print()
    print(f"Parts of the stages above ({label}; µs, thousands of instructions):\n")
    print("| part | " + " | ".join(TITLES[w] for w in wls) + " |")
    print("|---|" + "---:|" * len(wls))
    for p in data[wls[0]]["parts"].keys() if wls else []:
        cells = []
        for w in wls:
            v = data[w]["parts"][p]
            cells.append(f"{fmt_us(us(data[w], v))} ({fmt_k(v)})" if v else "-")
        print(f"| {p} | " + " | ".join(cells) + " |")
    print()


def floor_table(labels, all_data, floor):
    print("### Against the HTTP floor (server CPU per request, user + system, native run)\n")
    print("| workload | floor | " + " | ".join(labels) + " | target |")
    print("|---|---:|" + "---:|" * (len(labels) + 1))
    targets = {"point-read": 2.0, "batch-insert": 8.0}
    for w in WORKLOADS:
        f = floor.get(w, {}).get("native")
        if not f:
            continue
        fl = sum(f)
        cells = []
        for label in labels:
            n = all_data[label][w].get("native")
            cells.append(f"{fmt_us(sum(n))} µs ({sum(n) / fl:.1f}×)" if n else "-")
        target = targets.get(w, 3.5)
        print(f"| {TITLES[w]} | {fmt_us(fl)} µs | " + " | ".join(cells) + f" | ≤ {target}× |")
    print()
    print("Instructions per request counted by callgrind (user space, all threads):\n")
    print("| workload | floor | " + " | ".join(labels) + " |")
    print("|---|---:|" + "---:|" * len(labels))
    for w in WORKLOADS:
        fi = floor.get(w, {}).get("instr")
        cells = []
        for label in labels:
            i = all_data[label][w].get("instr")
            cells.append(f"{fmt_k(i)} ({i / fi:.1f}×)" if i and fi else (fmt_k(i) if i else "-"))
        print(f"| {TITLES[w]} | {fmt_k(fi) if fi else '-'} | " + " | ".join(cells) + " |")
    print()


def floor_load(out_dir):
    cg_dir = os.path.join(out_dir, "floor.callgrind")
    threads = callgrind_workloads(cg_dir)
    ops = bench_ops(glob.glob(os.path.join(cg_dir, "bench.*.json")))
    native = native_cpu(out_dir, "floor")
    out = {}
    for w in WORKLOADS:
        e = {"native": native.get(w)}
        if threads.get(w) and ops.get(w):
            e["instr"] = sum(t.total for t in threads[w]) / ops[w]
        out[w] = e
    return out


def ab_table(labels, all_data):
    base = labels[0]
    for other in labels[1:]:
        print(f"### {other} against {base}: instructions per request by stage\n")
        print(f"{other}'s count as a share of {base}'s (lower is better); the last rows are the")
        print("native CPU per request of the same run (noisy: a shared machine).\n")
        wls = [w for w in WORKLOADS if all_data[base][w].get("instr") and all_data[other][w].get("instr")]
        print("| stage | " + " | ".join(TITLES[w] for w in wls) + " |")
        print("|---|" + "---:|" * len(wls))
        for r in all_data[base][wls[0]]["rows"].keys() if wls else []:
            cells = []
            for w in wls:
                a, b = all_data[base][w]["rows"][r], all_data[other][w]["rows"][r]
                cells.append(f"{fmt_k(a)} → {fmt_k(b)}")
            print(f"| {r} | " + " | ".join(cells) + " |")
        cells = []
        for w in wls:
            a, b = all_data[base][w]["instr"], all_data[other][w]["instr"]
            cells.append(f"{fmt_k(a)} → {fmt_k(b)} (**{b / a:.2f}×**)")
        print("| **instructions, all stages** | " + " | ".join(cells) + " |")
        cells = []
        for w in wls:
            a, b = all_data[base][w].get("native"), all_data[other][w].get("native")
            cells.append(f"{fmt_us(sum(a))} → {fmt_us(sum(b))} µs ({sum(b) / sum(a):.2f}×)" if a and b else "-")
        print("| server CPU per request (native) | " + " | ".join(cells) + " |")
        print()


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: request_path_budget.py OUT_DIR LABEL [LABEL ...]")
    out_dir, labels = sys.argv[1], sys.argv[2:]
    all_data = {label: load(out_dir, label) for label in labels}
    print(f"## The request path's budget ({os.path.basename(out_dir.rstrip('/'))})\n")
    for label in labels:
        budget_table(label, all_data[label])
    if os.path.isdir(os.path.join(out_dir, "floor.callgrind")) or glob.glob(
        os.path.join(out_dir, "floor.native.*.json")
    ):
        floor_table(labels, all_data, floor_load(out_dir))
    if len(labels) > 1:
        ab_table(labels, all_data)


if __name__ == "__main__":
    main()
