"""Seed 002 (SPDC), Figure 5: uniform against weighted sampling on rows of different norms.

    python -m benchmarks.seed002_figure5 [--datasets w8a ijcnn1 a9a] [--alpha 1e-6] [--passes 200]

As the seed's Sec. 7.3: the rows are *not* normalized, only scaled by one constant so that their
average norm is 1 (the loss is then 1-smooth on average while single rows may be much longer).
Smoothed hinge (gamma = 1) at the given alpha, no intercept. Measured in passes over the data,
by fastdual's own certificate (one check per epoch): the passes until the relative duality gap
is at most 1e-3 and 1e-5, for SPDC and SDCA, each with uniform and weighted sampling. Prints a
table and writes benchmarks/results/seed002_figure5.png (relative gap against passes).
"""
import argparse
import lzma
import os
import sys
import warnings

import numpy as np

from .datasets import LIBSVM_SETS, binary_labels, data_dir

RUNS = (("SPDC uniform", "spdc", "uniform"), ("SPDC weighted", "spdc", "weighted"),
        ("SDCA uniform", "sdca", "uniform"), ("SDCA weighted", "sdca", "weighted"))
TARGETS = (1e-3, 1e-5)


def raw_rows_of_mean_norm_one(name):
    from sklearn.datasets import load_svmlight_file
    fname, rule = LIBSVM_SETS[name]
    with lzma.open(os.path.join(data_dir(), fname)) as f:
        X, raw = load_svmlight_file(f, zero_based=False)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return (X / norms.mean()).tocsr(), binary_labels(raw, rule), norms / norms.mean()


def gaps(X, y, solver, sampling, alpha, passes):
    import fastdual
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fastdual.train(X, y, loss="smooth_hinge", alpha=alpha, fit_intercept=False,
                               solver=solver, sampling=sampling, tol=0.0, max_epochs=passes,
                               check_every=1, random_state=0)
    return np.array([h["gap"] / abs(h["primal"]) for h in model.history_])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["w8a", "ijcnn1", "a9a"])
    parser.add_argument("--alpha", type=float, default=1e-6)
    parser.add_argument("--passes", type=int, default=200)
    parser.add_argument("--out", default=os.path.join("benchmarks", "results"))
    args = parser.parse_args(argv)
    header = " | ".join(f"{label} to {t:g}" for label, _, _ in RUNS for t in TARGETS)
    print(f"| data | max / mean row norm | {header} |")
    print("|---|---:|" + "---:|" * (len(RUNS) * len(TARGETS)))
    curves = {}
    for name in args.datasets:
        X, y, norms = raw_rows_of_mean_norm_one(name)
        cells = []
        for label, solver, sampling in RUNS:
            curve = gaps(X, y, solver, sampling, args.alpha, args.passes)
            curves[(name, label)] = curve
            for target in TARGETS:
                hit = np.nonzero(curve <= target)[0]
                cells.append(str(hit[0] + 1) if hit.size else f"> {len(curve)}")
        print(f"| {name} | {norms.max():.3g} | " + " | ".join(cells) + " |", flush=True)
    try:
        from .plots import semilogy_panels
    except ImportError:
        print("matplotlib is not installed: no figure", file=sys.stderr)
        return 0
    panels = [(f"{name}, alpha = {args.alpha:g}",
               {label: curves[(name, label)] for label, _, _ in RUNS})
              for name in args.datasets]
    print("wrote", semilogy_panels(panels, "passes over the data", "relative duality gap",
                                   os.path.join(args.out, "seed002_figure5.png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
