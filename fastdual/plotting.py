"""fastdual.plot_convergence: the certified gap and the primal over a training run."""
import numpy as np


def plot_convergence(models, x="epochs", labels=None, ax=None):
    """Plot each model's history_: the relative duality gap (log scale, the certificate) and the
    primal objective against epochs or seconds; several models on one figure. Needs matplotlib
    (pip install "fastdual[plot]"). Returns the matplotlib Figure."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plot_convergence needs matplotlib: pip install matplotlib "
                          "(or fastdual[plot])") from None
    if x not in ("epochs", "seconds"):
        raise ValueError(f"x must be 'epochs' or 'seconds', got {x!r}")
    models = list(models) if isinstance(models, (list, tuple)) else [models]
    if labels is not None and len(labels) != len(models):
        raise ValueError(f"labels has {len(labels)} entries for {len(models)} models")
    if ax is None:
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
    else:
        fig = np.atleast_1d(ax)[0].figure
    gap_ax, primal_ax = np.atleast_1d(ax)[:2]
    for k, model in enumerate(models):
        history = model.history_
        if not history:
            raise ValueError(f"model {k} has no history_ to plot")
        xs = [h["epoch" if x == "epochs" else "seconds"] for h in history]
        rel = [max(h["gap"], 0.0) / max(abs(h["primal"]), np.finfo(float).tiny) for h in history]
        label = labels[k] if labels is not None else f"{model.solver} ({model.loss})"
        gap_ax.semilogy(xs, np.maximum(rel, np.finfo(float).tiny), "o-", ms=3, label=label)
        primal_ax.plot(xs, [h["primal"] for h in history], "o-", ms=3, label=label)
    gap_ax.set_xlabel(x)
    gap_ax.set_ylabel("relative duality gap")
    primal_ax.set_xlabel(x)
    primal_ax.set_ylabel("primal objective")
    gap_ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
