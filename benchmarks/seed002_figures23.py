"""Seed 002 (SPDC), Figures 2-3: smoothed hinge at small regularization on real data sets.

    python -m benchmarks.seed002_figures23 [--datasets a9a ijcnn1 reuters_lasvm news20]
                                           [--lambdas 1e-5 1e-6 1e-7 1e-8] [--passes 300]

Rows normalized to unit norm (as everywhere in the suite), smoothed hinge (gamma = 1), no
intercept. For SPDC and SDCA (their default options): the passes until fastdual's certificate
reaches a relative duality gap of 1e-3 and 1e-5 (from a run checked every epoch), and the
seconds of a whole fastdual.train(tol=target) call with the default certificate schedule.
Prints a table and writes benchmarks/results/seed002_figures23.png (relative gap against
passes).
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np

from . import datasets as D

SOLVERS = ("spdc", "sdca")
TARGETS = (1e-3, 1e-5)


def run(X, y, solver, lam, passes):
    """(relative gap per pass, {target: seconds of a whole train(tol=target) call or None})."""
    import fastdual
    kwargs = dict(loss="smooth_hinge", alpha=lam, fit_intercept=False, solver=solver,
                  random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fastdual.train(X, y, tol=0.0, max_epochs=passes, check_every=1, **kwargs)
        gaps = np.array([h["gap"] / abs(h["primal"]) for h in model.history_])
        seconds = {}
        for target in TARGETS:
            if not (gaps <= target).any():
                seconds[target] = None
                continue
            t0 = time.perf_counter()
            fastdual.train(X, y, tol=target, max_epochs=passes, **kwargs)
            seconds[target] = time.perf_counter() - t0
    return gaps, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["a9a", "ijcnn1", "reuters_lasvm",
                                                          "news20"])
    parser.add_argument("--lambdas", type=float, nargs="+", default=[1e-5, 1e-6, 1e-7, 1e-8])
    parser.add_argument("--passes", type=int, default=300)
    parser.add_argument("--out", default=os.path.join("benchmarks", "results"))
    args = parser.parse_args(argv)
    cols = " | ".join(f"{s.upper()} to {t:g}: passes (s)" for t in TARGETS for s in SOLVERS)
    print(f"| data | lambda | {cols} |")
    print("|---|---:|" + "---:|" * (len(TARGETS) * len(SOLVERS)))
    curves = {}
    for name in args.datasets:
        X, y = D.load(name)
        for lam in args.lambdas:
            cells = []
            results = {s: run(X, y, s, lam, args.passes) for s in SOLVERS}
            for target in TARGETS:
                for s in SOLVERS:
                    gaps, seconds = results[s]
                    hit = np.nonzero(gaps <= target)[0]
                    cells.append(f"{hit[0] + 1} ({seconds[target]:.3g})" if hit.size
                                 else f"> {len(gaps)}")
            curves[(name, lam)] = {s: results[s][0] for s in SOLVERS}
            print(f"| {name} | {lam:g} | " + " | ".join(cells) + " |", flush=True)
    try:
        from .plots import semilogy_panels
    except ImportError:
        print("matplotlib is not installed: no figure", file=sys.stderr)
        return 0
    panels = [(f"{name}, lambda = {lam:g}",
               {s.upper(): curves[(name, lam)][s] for s in SOLVERS})
              for name in args.datasets for lam in args.lambdas]
    print("wrote", semilogy_panels(panels, "passes", "relative duality gap",
                                   os.path.join(args.out, "seed002_figures23.png"),
                                   columns=len(args.lambdas), panel_size=(3.4, 2.8)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
