"""fastdual.plot_convergence: the certified gap and the primal over a training run;
fastdual.plot_path: the coefficients along a regularization path (fastdual.path)."""
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


def plot_path(path, ax=None, gaps=False, features=None, labels=None):
    """Plot a regularization path (fastdual.path's Path): each coefficient against alpha, on a
    log axis decreasing to the right (as glmnet's and scikit-learn's path plots), so that
    features enter from the left as the penalty weakens. k classes (one-vs-rest): one line per
    class and feature, each class's lines in one color.

    gaps=True draws the certified relative duality gap of each model on a second y axis (log
    scale, dashed). features: the indices of the features to draw (default: every one nonzero
    somewhere on the path); labels: their names (one per drawn feature, shown in a legend).
    Needs matplotlib (pip install "fastdual[plot]"). Returns the matplotlib Figure."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plot_path needs matplotlib: pip install matplotlib "
                          "(or fastdual[plot])") from None
    alphas, coefs = np.asarray(path.alphas), np.asarray(path.coefs)
    if coefs.ndim == 2:
        coefs = coefs[None]
    if features is None:
        features = np.flatnonzero(np.any(coefs != 0.0, axis=(0, 2)))
    else:
        features = np.atleast_1d(np.asarray(features))
        if (features.ndim != 1 or features.dtype.kind not in "iu"
                or np.any((features < 0) | (features >= coefs.shape[1]))):
            raise ValueError(f"features must be indices of the path's {coefs.shape[1]} "
                             "features")
    if labels is not None and len(labels) != features.shape[0]:
        raise ValueError(f"labels has {len(labels)} entries for {features.shape[0]} features")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4))
    else:
        fig = ax.figure
    for k in range(coefs.shape[0]):
        color = None if coefs.shape[0] == 1 else f"C{k}"
        for i, j in enumerate(features):
            label = labels[i] if labels is not None and k == 0 else None
            ax.plot(alphas, coefs[k, j], color=color, lw=1, label=label)
    ax.set_xscale("log")
    if alphas.shape[0] > 1 and not ax.xaxis_inverted():
        ax.invert_xaxis()
    ax.axhline(0.0, color="0.7", lw=0.5)
    ax.set_xlabel("alpha")
    ax.set_ylabel("coefficients")
    ax.set_title(f"{path.loss}, l1_ratio={path.l1_ratio:g}")
    if labels is not None:
        ax.legend(fontsize=7, loc="lower left", ncol=2)
    if gaps:
        gap_ax = ax.twinx()
        gap_ax.semilogy(alphas, np.maximum(np.asarray(path.relative_gaps),
                                           np.finfo(float).tiny),
                        "k--", lw=1, label="relative duality gap")
        gap_ax.set_ylabel("relative duality gap")
    fig.tight_layout()
    return fig
