#!/usr/bin/env python3
"""Draws the scaling curves of wm_bench_distributed --json runs as an SVG (no plotting
dependency): measurements per second against the number of measuring workers (log-log), one
curve per run (cost model), with each run's bound set by rank 0's search alone and the ideal
line of the first (one worker's rate times N).
usage: plot.py OUT.svg SCALING.json [MORE.json ...]"""
import json
import math
import sys


COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"]


def main():
    runs = [json.load(open(p)) for p in sys.argv[2:]]
    j = runs[0]
    ns = [r["workers"] for r in j["rows"]]
    rates = [[r["trials_per_s"] for r in run["rows"]] for run in runs]
    bounds = [run["rows"][0]["trials"] / run["search_s"] if run["search_s"] > 0 else None for run in runs]
    ideal = [rates[0][0] * n / ns[0] for n in ns]
    W, H, L, R, T, B = 700, 400, 70, 220, 40, 50
    ymax = max(ideal + sum(rates, []) + [b for b in bounds if b])
    ymin = min(sum(rates, [])) / 2
    xl, xh = math.log2(min(ns)), math.log2(max(ns))
    yl, yh = math.log10(ymin), math.log10(ymax * 1.2)

    def X(n):
        return L + (math.log2(n) - xl) / (xh - xl) * (W - L - R)

    def Y(v):
        return T + (yh - math.log10(v)) / (yh - yl) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="20" font-size="14">{j["model"]}: {j["tasks"]} tasks x {j["trials_per_task"]} trials, '
           f'simulated workers</text>',
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
    out.append(f'<text transform="translate(16,{(T + H - B) / 2}) rotate(-90)" text-anchor="middle">measurements per second</text>')

    def poly(vals, color, dash=""):
        pts = " ".join(f"{X(n):.1f},{Y(v):.1f}" for n, v in zip(ns, vals))
        d = f' stroke-dasharray="{dash}"' if dash else ""
        return f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{d}/>'

    out.append(poly(ideal, "#999", "6,4"))
    legend = [("#999", "6,4", f"ideal: N x {runs[0]['cost_model']} at 1")]
    for k, (run, rate, bound) in enumerate(zip(runs, rates, bounds)):
        c = COLORS[k % len(COLORS)]
        out.append(poly(rate, c))
        for n, v in zip(ns, rate):
            out.append(f'<circle cx="{X(n):.1f}" cy="{Y(v):.1f}" r="3" fill="{c}"/>')
        legend.append((c, "", f"{run['cost_model']} (search {run['search_s']:.0f} s)"))
        if bound:
            out.append(f'<line x1="{L}" y1="{Y(bound):.1f}" x2="{W - R}" y2="{Y(bound):.1f}" stroke="{c}" stroke-dasharray="2,3"/>')
    legend.append(("#555", "2,3", "rank 0 search only (bound)"))
    for i, (c, d, name) in enumerate(legend):
        y = T + 10 + 18 * i
        dash = f' stroke-dasharray="{d}"' if d else ""
        out.append(f'<line x1="{W - R + 10}" y1="{y}" x2="{W - R + 35}" y2="{y}" stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - R + 40}" y="{y + 4}">{name}</text>')
    out.append("</svg>")
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
