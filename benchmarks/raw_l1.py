"""Pure l1 on raw counts (LIBLINEAR's -s 5 / -s 6 problems, one class at a time): passes,
seconds and the certified relative gap of solver="auto" (cd) at growing epoch budgets.

    python -m benchmarks.raw_l1 [--datasets news20 rcv1like] [--losses logistic squared_hinge]
                                [--max-epochs 1000 5000] [--repeats 1]

Cases: news20 as distributed, its first class against the rest (benchmarks.datasets.load_raw),
and the rcv1-like set of benchmarks.cli_types built in memory (20,000 x 100,000, 80 nonzeros a
row, unit rows scaled by a lognormal length; the file cli_types writes rounds the values to six
digits). C = 1 (alpha = 1 / n), l1_ratio = 1, LIBLINEAR's regularised intercept (B = 1), and
train(tol=1e-4, max_epochs=budget): a run ends at a certified relative gap of 1e-4 or at the
budget. docs/math.md 4k, "Raw text", has what these runs measured.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import fastdual  # noqa: E402
from benchmarks.datasets import load_raw, make_sparse_text  # noqa: E402


def rcv1like():
    """The rows of benchmarks.cli_types.write_rcv1like, in memory."""
    X, y = make_sparse_text(n=20_000, d=100_000, nnz_per_row=80, seed=0)
    lengths = np.random.default_rng(1).lognormal(mean=3.0, sigma=1.0, size=X.shape[0])
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.data *= np.repeat(lengths, np.diff(X.indptr))
    return X, y


def dataset(name):
    return rcv1like() if name == "rcv1like" else load_raw(name)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["news20", "rcv1like"])
    parser.add_argument("--losses", nargs="+", default=["logistic", "squared_hinge"])
    parser.add_argument("--max-epochs", nargs="+", type=int, default=[1000, 5000])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    print("| data | loss | max_epochs | passes | s | primal | relative gap | converged |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name in args.datasets:
        X, y = dataset(name)
        for loss in args.losses:
            for budget in args.max_epochs:
                seconds = []
                for _ in range(args.repeats):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
                        start = time.perf_counter()
                        model = fastdual.train(X, y, loss=loss, C=1.0, l1_ratio=1.0, tol=1e-4,
                                               max_epochs=budget)
                        seconds.append(time.perf_counter() - start)
                print(f"| {name} | {loss} | {budget} | {model.n_epochs_} | "
                      f"{statistics.median(seconds):.2f} | {model.primal_:.9g} | "
                      f"{model.relative_gap_:.2e} | {'yes' if model.converged_ else 'no'} |",
                      flush=True)


if __name__ == "__main__":
    main()
