"""solver="auto" on the smoothed hinge where rule 4 picks Newton: SDCA's first epochs before
Newton (auto.flat_start: Newton's first model is the l2 penalty alone) against Newton from zero.

    python -m benchmarks.flat_start [--epochs 0 2 4 8] [--repeats 5]

Time to a certified 1e-4 relative gap (train(tol=1e-4), LIBLINEAR's intercept), medians of
`repeats`, one thread, the passes of the run and the solver it ended with; 0 epochs is Newton
from zero (auto.flat_start patched to False), k epochs FLAT_START_EPOCHS = k. Cases: mushrooms,
w8a, a9a and ijcnn1 at unit rows, alpha 1e-5, 1e-6, 1e-8; a9a, ijcnn1, mushrooms and letter
(its first class against the rest) as distributed at C = 3 and 30.
"""
import argparse
import time
import warnings

import numpy as np

import fastdual
from benchmarks.datasets import load
from benchmarks.direct_rule import load_binary
from fastdual.solvers import auto


def cases():
    for name in ("mushrooms", "w8a", "a9a", "ijcnn1"):
        X, y = load(name)
        for alpha in (1e-5, 1e-6, 1e-8):
            yield name, "unit", "alpha = %g" % alpha, X, y, dict(alpha=alpha)
    for name in ("a9a", "ijcnn1", "mushrooms", "letter"):
        X, y = load_binary(name)
        for C in (3.0, 30.0):
            yield name, "raw", "C = %g" % C, X, y, dict(C=C)


def timed(X, y, repeats, epochs, **reg):
    flat_start, count = auto.flat_start, auto.FLAT_START_EPOCHS
    if epochs == 0:
        auto.flat_start = lambda problem: False
    else:
        auto.FLAT_START_EPOCHS = epochs
    try:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            model = fastdual.train(X, y, loss="smooth_hinge", tol=1e-4, random_state=0, **reg)
            times.append(time.perf_counter() - start)
    finally:
        auto.flat_start, auto.FLAT_START_EPOCHS = flat_start, count
    return float(np.median(times)), model.n_epochs_, model.solver


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", nargs="+", type=int, default=[0, 2, 4, 8])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print("| data | rows | regularisation | " + " | ".join(
        "%d epochs: s (passes, solver)" % k for k in args.epochs) + " |")
    print("|---|---|---|" + "---:|" * len(args.epochs))
    ratios = {k: [] for k in args.epochs[1:]}
    for name, rows, label, X, y, reg in cases():
        out = [timed(X, y, args.repeats, k, **reg) for k in args.epochs]
        print(f"| {name} | {rows} | {label} | " + " | ".join(
            "%.4f (%d, %s)" % cell for cell in out) + " |", flush=True)
        for k, cell in zip(args.epochs[1:], out[1:]):
            ratios[k].append(cell[0] / out[0][0])
    print()
    for k, values in ratios.items():
        values = np.array(values)
        print(f"{k} epochs / {args.epochs[0]}: geo-mean {np.exp(np.mean(np.log(values))):.2f} "
              f"({values.min():.2f} - {values.max():.2f})")


if __name__ == "__main__":
    main()
