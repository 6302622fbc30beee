#!/usr/bin/env python3
"""Plots tablestore-bench results of scripts/scaling.sh as one SVG: throughput of each workload
and the server's peak RSS against the number of entities (log scale). Standard library only."""
import argparse
import json
import math


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        n = int(d["label"])
        per = {w["name"]: w for w in d["workloads"]}
        rss = max((w["server"]["vmhwm_kib"] or 0) for w in d["workloads"] if w.get("server")) / 1024
        rows.append((n, per, rss))
    return sorted(rows, key=lambda r: r[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("-o", "--output", default="scaling.svg")
    args = ap.parse_args()
    rows = load(args.files)
    series = {w: [(n, per[w]["ops_per_s"]) for n, per, _ in rows if w in per]
              for w in ("point-read", "insert", "range-query")}
    series["peak RSS (MiB)"] = [(n, rss) for n, _, rss in rows]
    colors = {"point-read": "#1f77b4", "insert": "#ff7f0e", "range-query": "#2ca02c", "peak RSS (MiB)": "#d62728"}
    W, H, L, R, T, B = 760, 420, 70, 170, 30, 50
    xs = [n for n, _, _ in rows]
    lx = lambda n: L + (math.log10(n) - math.log10(min(xs))) / max(1e-9, math.log10(max(xs)) - math.log10(min(xs))) * (W - L - R)
    ymax = max(v for s in series.values() for _, v in s) * 1.1
    ly = lambda v: H - B - v / ymax * (H - T - B)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<line x1="{L}" y1="{H-B}" x2="{W-R}" y2="{H-B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>',
           f'<text x="{(W-R+L)/2}" y="{H-10}" text-anchor="middle">entities in the table (log scale)</text>',
           f'<text x="15" y="{(H-B+T)/2}" transform="rotate(-90 15 {(H-B+T)/2})" text-anchor="middle">ops/s, or MiB for RSS</text>']
    for n in xs:
        out.append(f'<text x="{lx(n):.1f}" y="{H-B+16}" text-anchor="middle">{n:,}</text>')
    for i in range(6):
        v = ymax * i / 5
        out.append(f'<text x="{L-6}" y="{ly(v)+4:.1f}" text-anchor="end">{v:,.0f}</text>')
    for k, (name, pts) in enumerate(series.items()):
        c = colors[name]
        path = " ".join(f"{'M' if i == 0 else 'L'}{lx(n):.1f},{ly(v):.1f}" for i, (n, v) in enumerate(pts))
        out.append(f'<path d="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        out += [f'<circle cx="{lx(n):.1f}" cy="{ly(v):.1f}" r="3" fill="{c}"/>' for n, v in pts]
        # Values are written beside the points: RSS and range queries are small on this scale.
        out += [f'<text x="{lx(n)+5:.1f}" y="{ly(v)-5:.1f}" fill="{c}" font-size="10">{v:,.0f}</text>' for n, v in pts]
        out.append(f'<rect x="{W-R+15}" y="{T+k*20}" width="12" height="12" fill="{c}"/>')
        out.append(f'<text x="{W-R+32}" y="{T+k*20+10}">{name}</text>')
    out.append("</svg>")
    with open(args.output, "w") as f:
        f.write("\n".join(out))
    print(f"wrote {args.output}")
    for n, per, rss in rows:
        print(n, {w: round(per[w]["ops_per_s"]) for w in per}, f"RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
