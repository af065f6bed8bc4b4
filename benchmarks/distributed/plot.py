#!/usr/bin/env python3
"""Draws the scaling curve of wm_bench_distributed --json OUT.json as an SVG (no plotting
dependency): trials per second against the number of measuring workers (log-log), with the
ideal line (one worker's rate times N) and the bound set by rank 0's search alone.
usage: plot.py SCALING.json OUT.svg"""
import json
import math
import sys


def main():
    j = json.load(open(sys.argv[1]))
    rows = j["rows"]
    ns = [r["workers"] for r in rows]
    rate = [r["trials_per_s"] for r in rows]
    trials = rows[0]["trials"]
    ideal = [rate[0] * n / ns[0] for n in ns]
    bound = trials / j["search_s"] if j["search_s"] > 0 else None
    W, H, L, R, T, B = 640, 400, 70, 170, 40, 50
    ymax = max(ideal + rate + ([bound] if bound else []))
    ymin = min(rate) / 2
    xl, xh = math.log2(min(ns)), math.log2(max(ns))
    yl, yh = math.log10(ymin), math.log10(ymax * 1.2)

    def X(n):
        return L + (math.log2(n) - xl) / (xh - xl) * (W - L - R)

    def Y(v):
        return T + (yh - math.log10(v)) / (yh - yl) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="20" font-size="14">{j["model"]}: {j["tasks"]} tasks x {j["trials_per_task"]} trials, '
           f'{j["cost_model"]} (simulated workers)</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    for n in ns:
        out.append(f'<line x1="{X(n):.1f}" y1="{H - B}" x2="{X(n):.1f}" y2="{H - B + 5}" stroke="black"/>')
        out.append(f'<text x="{X(n):.1f}" y="{H - B + 18}" text-anchor="middle">{n}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">measuring workers (MPI ranks - 1)</text>')
    e = math.floor(yl)
    while e <= yh:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if yl <= math.log10(v) <= yh:
                out.append(f'<line x1="{L - 5}" y1="{Y(v):.1f}" x2="{W - R}" y2="{Y(v):.1f}" stroke="#ddd"/>')
                out.append(f'<text x="{L - 8}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        e += 1
    out.append(f'<text transform="translate(16,{(T + H - B) / 2}) rotate(-90)" text-anchor="middle">trials per second</text>')

    def poly(vals, color, dash=""):
        pts = " ".join(f"{X(n):.1f},{Y(v):.1f}" for n, v in zip(ns, vals))
        d = f' stroke-dasharray="{dash}"' if dash else ""
        return f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{d}/>'

    out.append(poly(ideal, "#999", "6,4"))
    out.append(poly(rate, "#1f77b4"))
    for n, v in zip(ns, rate):
        out.append(f'<circle cx="{X(n):.1f}" cy="{Y(v):.1f}" r="3" fill="#1f77b4"/>')
    legend = [("#1f77b4", "", "simulated"), ("#999", "6,4", "ideal (N x one worker)")]
    if bound:
        out.append(f'<line x1="{L}" y1="{Y(bound):.1f}" x2="{W - R}" y2="{Y(bound):.1f}" stroke="#d62728" stroke-dasharray="2,3"/>')
        legend.append(("#d62728", "2,3", "rank 0 search only"))
    for i, (c, d, name) in enumerate(legend):
        y = T + 10 + 18 * i
        dash = f' stroke-dasharray="{d}"' if d else ""
        out.append(f'<line x1="{W - R + 10}" y1="{y}" x2="{W - R + 35}" y2="{y}" stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - R + 40}" y="{y + 4}">{name}</text>')
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
