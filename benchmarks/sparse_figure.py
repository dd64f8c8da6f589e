"""The figure of benchmarks.sparse: per case, fastdual cd's time over the fastest peer's to 1e-4
and 1e-6 relative suboptimality (log scale; below 1: fastdual first), and the certified run's.

    python -m benchmarks.sparse --json sparse.json
    python -m benchmarks.sparse_figure sparse.json docs/figures/sparse_ratios.png
"""
import json
import sys

import numpy as np


def ratios(result, index, key="fastdual cd"):
    rows = {name: times for name, times, _ in result["rows"]}
    ours = rows[key][index]
    peers = [times[index] for name, times in rows.items()
             if not name.startswith("fastdual") and times[index] is not None]
    if ours is None or not peers:
        return np.nan
    return ours / min(peers)


def main(argv=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    source, target = (argv or sys.argv[1:])[:2]
    with open(source) as f:
        results = json.load(f)
    labels = [r["case"] for r in results]
    y = np.arange(len(results))
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(results) + 1.2))
    for offset, (index, key, name) in zip((-0.27, -0.09, 0.09, 0.27), (
            (0, "fastdual cd", "1e-4"), (1, "fastdual cd", "1e-6"),
            (0, "fastdual cd (certified)", "1e-4 certified"),
            (1, "fastdual cd (certified)", "1e-6 certified"))):
        values = [ratios(r, index, key) for r in results]
        ax.barh(y + offset, values, height=0.18, label=name)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.axvline(0.5, color="grey", linewidth=0.6, linestyle="--")
    ax.set_xscale("log")
    ax.set_yticks(y, labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("fastdual time / fastest peer's time (log; < 1: fastdual first)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(target, dpi=120)


if __name__ == "__main__":
    main()
