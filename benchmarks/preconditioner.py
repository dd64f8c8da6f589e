"""Newton-CG's preconditioner: passes and time to a certified gap for values of its mix.

    python -m benchmarks.preconditioner [--datasets news20 reuters_lasvm sector synth_sparse
                                         a9a w8a ijcnn1] [--mix 0.01 0.003 0.001]
                                        [--losses logistic squared_hinge smooth_hinge squared]
                                        [--alphas 1e-4 1e-6 1e-8] [--C 0.1 1 10]
                                        [--max-epochs 1000] [--repeats 1] [--json FILE]

solver="newton" trains each case to a certified relative gap of 1e-4 (train(tol=1e-4)), one
thread, once per value of newton.PRECONDITIONER_MIX: the conjugate gradient's preconditioner
(1 - m) l2 + m (diag(X^T D X) / n + l2), LIBLINEAR's mix of the identity and the Jacobi
diagonal at m = 0.01. The cases: each set's rows scaled to unit norm (the suite's loader,
no intercept) at --alphas, and its rows as distributed ("raw") with LIBLINEAR's intercept
feature at --C; synth_sparse (10,000 rows of 10^6 Zipf-drawn features) on unit rows only.
Newton is deterministic, so its passes are the same in every run; the time is the minimum of
--repeats. Prints every case, then each mix against the first: the geo-mean, the range and
the count of cases with fewer passes and with less time (docs/benchmarks.md, G2f).
"""
import argparse
import json
import time
import warnings

import numpy as np

import fastdual
from benchmarks.datasets import load, load_raw
from fastdual.solvers import newton

SYNTH_ROWS = 10_000


def cases(args):
    """(set, rows, loss, regularisation label, X, y, train keyword arguments) of every case."""
    for name in args.datasets:
        unit = load(name, n_samples=SYNTH_ROWS if name == "synth_sparse" else None)
        scalings = [("unit", unit)]
        if name != "synth_sparse":
            scalings.append(("raw", load_raw(name)))
        for rows, (X, y) in scalings:
            for loss in args.losses:
                if rows == "unit":
                    for alpha in args.alphas:
                        yield name, rows, loss, f"alpha = {alpha:g}", X, y, dict(alpha=alpha)
                else:
                    for C in args.C:
                        yield name, rows, loss, f"C = {C:g}", X, y, dict(
                            C=C, fit_intercept=True, intercept_scaling=1.0)


def run(X, y, loss, options, mix, args):
    """(passes, seconds, converged) of Newton at the preconditioner's mix."""
    saved = newton.PRECONDITIONER_MIX
    newton.PRECONDITIONER_MIX = mix
    try:
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            model = fastdual.train(X, y, loss=loss, solver="newton", tol=1e-4,
                                   max_epochs=args.max_epochs, **options)
            times.append(time.perf_counter() - start)
    finally:
        newton.PRECONDITIONER_MIX = saved
    return int(model.n_epochs_), min(times), bool(model.converged_)


def summary(rows, mixes):
    base = mixes[0]
    print()
    print(f"| mix | cases | passes / mix {base:g}, geo-mean (min - max) | fewer passes | "
          f"time / mix {base:g}, geo-mean (min - max) | less time |")
    print("|---:|---:|---|---:|---|---:|")
    for mix in mixes[1:]:
        passes = np.array([r["passes"][str(mix)] / r["passes"][str(base)] for r in rows])
        times = np.array([r["seconds"][str(mix)] / r["seconds"][str(base)] for r in rows])
        print(f"| {mix:g} | {len(rows)} | {np.exp(np.mean(np.log(passes))):.2f} "
              f"({passes.min():.2f} - {passes.max():.2f}) | {int(np.sum(passes < 1))} | "
              f"{np.exp(np.mean(np.log(times))):.2f} ({times.min():.2f} - {times.max():.2f}) | "
              f"{int(np.sum(times < 1))} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["news20", "reuters_lasvm", "sector", "synth_sparse", "a9a",
                                 "w8a", "ijcnn1"])
    parser.add_argument("--mix", nargs="+", type=float, default=[0.01, 0.003, 0.001])
    parser.add_argument("--losses", nargs="+",
                        default=["logistic", "squared_hinge", "smooth_hinge", "squared"])
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-4, 1e-6, 1e-8])
    parser.add_argument("--C", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--max-epochs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    head = " | ".join(f"mix {m:g}: passes, s" for m in args.mix)
    print(f"| data | rows | loss | regularisation | {head} |")
    print("|---|---|---|---|" + "---|" * len(args.mix))
    for name, scaling, loss, label, X, y, options in cases(args):
        passes, seconds, cells = {}, {}, []
        for mix in args.mix:
            p, s, ok = run(X, y, loss, options, mix, args)
            passes[str(mix)], seconds[str(mix)] = p, s
            cells.append(f"{p}{'' if ok else '*'}, {s:.3f}")
        print(f"| {name} | {scaling} | {loss} | {label} | " + " | ".join(cells) + " |",
              flush=True)
        rows.append(dict(dataset=name, rows=scaling, loss=loss, regularisation=label,
                         passes=passes, seconds=seconds))
    summary(rows, args.mix)
    print("\n`*`: stopped at --max-epochs passes without the certified 1e-4.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
