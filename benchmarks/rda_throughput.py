"""RDA's speed: one online pass in samples per second against scikit-learn's
SGDClassifier.partial_fit and Vowpal Wabbit (pip `vowpalwabbit`, when installed), on the same
chunks, one thread; and one epoch of train(solver="rda") in units of the one-pass floor.

    python -m benchmarks.rda_throughput [--datasets a9a w8a reuters_lasvm news20]
                                        [--chunk 10000] [--repeats 5]

l1-regularized logistic regression, alpha = 1e-5 (scikit-learn's alpha and l1 penalty; VW's
--l1 with its default adaptive, normalised steps), free intercept for all. Times are medians of
repeats, each from a fresh model. VW is driven through its Python binding one example at a time
(its text lines are built before timing), which adds the binding's per-call cost to VW's own.
Epoch cost: (T(e epochs) - T(2 epochs)) / (e - 2) of train(tol=0, check_every large), in units
of the floor (median X @ w plus median X.T @ a, measured in the same run).
"""
import argparse
import os
import time
import warnings

import numpy as np

import fastdual
from benchmarks.datasets import load
from benchmarks.timing import matvec_floor

ALPHA = 1e-5


def chunks_of(X, y, size):
    return [(X[k:k + size], y[k:k + size]) for k in range(0, X.shape[0], size)]


def time_fastdual(chunks, variant="basic", output="last"):
    stream = fastdual.OnlineRDA("logistic", alpha=ALPHA, l1_ratio=1.0, classes=[-1.0, 1.0],
                                variant=variant, output=output)
    start = time.perf_counter()
    for X, y in chunks:
        stream.partial_fit(X, y)
    return time.perf_counter() - start


def time_sgd(chunks):
    from sklearn.linear_model import SGDClassifier
    model = SGDClassifier(loss="log_loss", penalty="l1", alpha=ALPHA, shuffle=False,
                          random_state=0)
    start = time.perf_counter()
    for X, y in chunks:
        model.partial_fit(X, y, classes=np.array([-1.0, 1.0]))
    return time.perf_counter() - start


def vw_lines(X, y):
    lines = []
    for i in range(X.shape[0]):
        row = X[i]
        features = " ".join(f"{j}:{v:.9g}" for j, v in zip(row.indices, row.data))
        lines.append(f"{int(y[i])} |f {features}")
    return lines


def time_vw(lines):
    from vowpalwabbit import Workspace
    workspace = Workspace(f"--loss_function logistic --l1 {ALPHA} --quiet -b 24")
    start = time.perf_counter()
    for line in lines:
        workspace.learn(line)
    elapsed = time.perf_counter() - start
    workspace.finish()
    return elapsed


def epoch_cost(X, y, variant="basic", output="last"):
    def run(epochs):
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fastdual.train(X, y, loss="logistic", alpha=ALPHA, l1_ratio=1.0, solver="rda",
                               variant=variant, output=output, tol=0.0, max_epochs=epochs,
                               check_every=10 ** 6, regularize_intercept=False, random_state=0)
            best = min(best, time.perf_counter() - start)
        return best
    epochs = 10
    while True:
        spent = run(epochs) - run(2)
        if spent >= 0.05 or epochs >= 160:
            return spent / (epochs - 2)
        epochs *= 2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["a9a", "w8a", "reuters_lasvm", "news20"])
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    try:
        import vowpalwabbit  # noqa: F401
        have_vw = True
    except ImportError:
        have_vw = False
    print("| data | n | nnz | fastdual OnlineRDA (samples/s) | SGDClassifier.partial_fit "
          "(samples/s) | ratio | Vowpal Wabbit (samples/s) | ratio | RDA epoch (ms) | floor (ms) "
          "| epoch / floor | averaged RDA epoch / floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        X, y = load(name)
        order = np.random.default_rng(0).permutation(X.shape[0])
        X, y = X[order], y[order]
        chunks = chunks_of(X, y, args.chunk)
        fd = np.median([time_fastdual(chunks) for _ in range(args.repeats)])
        sg = np.median([time_sgd(chunks) for _ in range(args.repeats)])
        n = X.shape[0]
        vw_cells = ["-", "-"]
        if have_vw:
            lines = vw_lines(X, y)
            vw = np.median([time_vw(lines) for _ in range(args.repeats)])
            vw_cells = [f"{n / vw:,.0f}", f"{vw / fd:.1f}"]
        floor = matvec_floor(X)["floor"]
        epoch = epoch_cost(X, y)
        averaged = epoch_cost(X, y, output="average")
        print(f"| {name} | {n} | {X.nnz} | {n / fd:,.0f} | {n / sg:,.0f} | {sg / fd:.1f} | "
              f"{vw_cells[0]} | {vw_cells[1]} | {1e3 * epoch:.2f} | {1e3 * floor:.2f} | "
              f"{epoch / floor:.2f} | {averaged / floor:.2f} |", flush=True)


if __name__ == "__main__":
    main()
