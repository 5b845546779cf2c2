#!/usr/bin/env python3
"""The summation tree `gemmlab explain` revealed, as a figure: every addition of the tree above the
products it joins (a product k at x = k; a node at the mean x of its inputs and one level above the
highest of them; fused tensor-core nodes, which add more than two inputs in one rounding, in orange),
and below it the number of additions on each product's path to the root. The title is the tree in
words; the full tree is the report's `tree.nodes` (each internal node's inputs, node K + i the i-th).

Reads the JSON only: the `.meta.json` beside a `gemmlab explain` CSV (its `report`), or a report as
`gemmlab.explain` returns it (`Explanation.report`, saved with json.dump).

    python3 plots/explain_tree.py results/explain/<run>/cli_K.meta.json out.png
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402


def read(path):
    with open(path) as f:
        j = json.load(f)
    report = j.get("report", j)
    tree = report.get("tree") if isinstance(report, dict) else None
    if not isinstance(tree, dict) or "nodes" not in tree or "products" not in tree:
        sys.exit(f"{path}: no revealed tree (expected an explain report with tree.products and tree.nodes; "
                 "a kernel refused before the tree stage has none)")
    K, nodes = int(tree["products"]), tree["nodes"]
    if K < 1:
        sys.exit(f"{path}: the report has no revealed tree (its tree stage did not finish: {tree.get('why', '')})")
    for i, children in enumerate(nodes):
        if len(children) < 2 or any(not 0 <= c < K + i for c in children):
            sys.exit(f"{path}: tree.nodes[{i}] = {children} is not a node of earlier inputs")
    return K, nodes, tree.get("words", ""), tree.get("form", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs=2, help="the explain JSON, then the output PNG")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    path, out = a.inputs
    if not out.endswith(".png"):
        sys.exit("usage: explain_tree.py IN.meta.json OUT.png")
    K, nodes, words, form = read(path)

    x = [float(k) for k in range(K)] + [0.0] * len(nodes)
    level = [0] * (K + len(nodes))
    fused = []
    for i, children in enumerate(nodes):
        n = K + i
        x[n] = sum(x[c] for c in children) / len(children)
        level[n] = 1 + max(level[c] for c in children)
        fused.append(len(children) > 2)
    # Additions on each product's path: from the root down (inputs always have smaller ids).
    depth = [0] * (K + len(nodes))
    for i in range(len(nodes) - 1, -1, -1):
        for c in nodes[i]:
            depth[c] = depth[K + i] + 1

    fig, (ax, axd) = plt.subplots(2, 1, figsize=(11, 7), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    for want, color in ((False, "#1e88e5"), (True, "#fb8c00")):
        segs = [((x[K + i], level[K + i]), (x[c], level[c])) for i, ch in enumerate(nodes) if fused[i] == want
                for c in ch]
        if segs:
            ax.add_collection(LineCollection(segs, colors=color, linewidths=0.6,
                                             label="fused node (one rounding of > 2 inputs)" if want
                                             else "binary add or FMA"))
    ax.set_xlim(-0.5, K - 0.5)
    ax.set_ylim(-0.5, max(level) + 0.5)
    ax.set_ylabel("level above the products")
    ax.legend(loc="upper right", fontsize=8)
    title = a.title or (words if len(words) <= 160 else words[:157] + "...")
    ax.set_title(title, fontsize=9)
    if form:
        ax.text(0.01, 0.98, form if len(form) <= 120 else form[:117] + "...", transform=ax.transAxes, va="top",
                fontsize=7, family="monospace", color="#555555")
    axd.plot(range(K), depth[:K], color="#424242", linewidth=0.8)
    axd.set_xlabel("product k")
    axd.set_ylabel("additions on its path")
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    print(f"wrote {out}: {K} products, {len(nodes)} additions ({sum(fused)} fused)")


if __name__ == "__main__":
    main()
