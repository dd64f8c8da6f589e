"""Newton's line search past the minimum (docs/math.md 4f): solver="newton" with the first
trial cut to the minimum along an overshooting step, against the first trial at t = 1
(Armijo's halvings alone, as before), in one process, alternating.

    python -m benchmarks.line_search [--losses smooth_hinge squared_hinge
                                      squared_epsilon_insensitive] [--repeats 3]
                                     [--small a9a w8a ijcnn1 mushrooms letter] [--C 0.01 0.1 1 10]
                                     [--large w8a reuters_lasvm news20 synth_dense]
                                     [--alphas 1e-6 1e-8]

Time to a certified 1e-4 relative gap (train(tol=1e-4), max_epochs=1000), medians of
`repeats`, and the passes (epochs) of the run: the "small" sets as distributed ("raw") and at
unit rows, LIBLINEAR's intercept, at each C; the "large" sets of benchmarks.datasets (unit rows)
at each alpha. "before" replaces Newton._line_start by the first trial at t = 1.
"""
import argparse
import time
import warnings

import numpy as np

import fastdual
from benchmarks.datasets import load, normalize_rows
from benchmarks.direct_rule import load_binary
from fastdual.solvers.newton import Newton

CUT = Newton._line_start


def at_one(self, step, slope):
    return 1.0, None


def run(X, y, repeats, **kwargs):
    """{"before": (median s, passes), "now": (...)}, the two alternating."""
    times = {"before": [], "now": []}
    passes = {}
    try:
        for _ in range(repeats):
            for name, start in (("before", at_one), ("now", CUT)):
                Newton._line_start = start
                t0 = time.perf_counter()
                model = fastdual.train(X, y, solver="newton", tol=1e-4, max_epochs=1000,
                                       **kwargs)
                times[name].append(time.perf_counter() - t0)
                passes[name] = (model.n_epochs_, model.converged_)
    finally:
        Newton._line_start = CUT
    return {k: (float(np.median(v)), passes[k]) for k, v in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--losses", nargs="+",
                        default=["smooth_hinge", "squared_hinge", "squared_epsilon_insensitive"])
    parser.add_argument("--small", nargs="*", default=["a9a", "w8a", "ijcnn1", "mushrooms",
                                                       "letter"])
    parser.add_argument("--C", nargs="+", type=float, default=[0.01, 0.1, 1.0, 10.0])
    parser.add_argument("--large", nargs="*", default=["w8a", "reuters_lasvm", "news20",
                                                       "synth_dense"])
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-6, 1e-8])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    cases = []
    for name in args.small:
        raw = load_binary(name)
        for rows, (X, y) in (("raw", raw), ("unit", (normalize_rows(raw[0]), raw[1]))):
            for C in args.C:
                cases.append((name, rows, "C = %g" % C, X, y, dict(C=C)))
    for name in args.large:
        X, y = load(name)
        for alpha in args.alphas:
            cases.append((name, "unit", "alpha = %g" % alpha, X, y, dict(alpha=alpha)))
    print("| data | rows | regularisation | loss | before: s (passes) | now: s (passes) "
          "| now / before |")
    print("|---|---|---|---|---:|---:|---:|")
    ratios = {}
    for name, rows, label, X, y, reg in cases:
        for loss in args.losses:
            out = run(X, y, args.repeats, loss=loss, **reg)
            cells = ["%.4f (%d%s)" % (s, p, "" if ok else "*") for s, (p, ok) in
                     (out["before"], out["now"])]
            ratio = out["now"][0] / out["before"][0]
            ratios.setdefault(loss, []).append((ratio, out["now"][1][0] / out["before"][1][0]))
            print(f"| {name} | {rows} | {label} | {loss} | {cells[0]} | {cells[1]} | "
                  f"{ratio:.2f} |", flush=True)
    print()
    print("| loss | cases | now / before: time, geo-mean (min - max) | passes, geo-mean |")
    print("|---|---:|---|---:|")
    for loss, values in ratios.items():
        t = np.array([v[0] for v in values])
        p = np.array([v[1] for v in values])
        print(f"| {loss} | {len(values)} | {np.exp(np.mean(np.log(t))):.2f} "
              f"({t.min():.2f} - {t.max():.2f}) | {np.exp(np.mean(np.log(p))):.2f} |")


if __name__ == "__main__":
    main()
