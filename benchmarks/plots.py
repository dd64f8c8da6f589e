"""Convergence figures: log relative suboptimality vs seconds and vs passes."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FLOOR = 1e-16


def plot_case(case, out_dir):
    fig, (ax_t, ax_p) = plt.subplots(1, 2, figsize=(12, 4.5))
    p_star = case["p_star"]
    for sname, e in sorted(case["solvers"].items()):
        curve = e.get("curve")
        if not curve:
            continue
        sub = [max((pt["primal"] - p_star) / abs(p_star), FLOOR) for pt in curve]
        secs = [pt["seconds"] for pt in curve]
        line, = ax_t.loglog(secs, sub, marker=".", label=sname)
        if e.get("kind") == "iter":
            passes = [pt["budget"] for pt in curve]
            ax_p.semilogy(passes, sub, marker=".", color=line.get_color(), label=sname)
    for ax in (ax_t, ax_p):
        for eps in (1e-2, 1e-4, 1e-6):
            ax.axhline(eps, color="0.85", lw=0.8, zorder=0)
        ax.set_ylabel("(P - P*) / |P*|")
        ax.grid(True, which="major", alpha=0.3)
    ax_t.set_xlabel("seconds (median over repeats, one thread)")
    ax_p.set_xlabel("passes (epochs / iterations as counted by each solver)")
    ax_p.set_xscale("log")
    ax_t.legend(fontsize=7, loc="best")
    fig.suptitle("%s | %s | alpha=%g | P*=%.10g" % (case["dataset"], case["problem"],
                                                    case["alpha"], p_star))
    fig.tight_layout()
    path = os.path.join(out_dir, "%s_%s_%g.png" % (case["dataset"], case["problem"],
                                                  case["alpha"]))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def semilogy_panels(panels, xlabel, ylabel, path, columns=None, panel_size=(4.0, 3.4)):
    """One log-scale panel per (title, {label: values against passes 1, 2, ...}), in a grid of
    `columns` (default: one row), written to `path`."""
    columns = columns or len(panels)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, squeeze=False,
                             figsize=(panel_size[0] * columns, panel_size[1] * rows))
    for ax, (title, curves) in zip(axes.flat, panels):
        for label, values in curves.items():
            ax.semilogy(range(1, len(values) + 1), [max(v, FLOOR) for v in values], label=label)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
    for row in axes:
        row[0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
