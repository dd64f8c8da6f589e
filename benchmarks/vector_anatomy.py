"""What one epoch of the k-class kernels (multiclass="multinomial" and "crammer_singer") costs,
in units of the k-class matrix-vector floor.

    python -m benchmarks.vector_anatomy [--datasets letter satimage dna pendigits news20 sector]
                                        [--strategies multinomial crammer_singer] [--repeats 5]

For each data set (benchmarks.multiclass's training sets, rows at unit norm) and strategy, in one
process, one thread, minimum over repeats:

* floor: ``X @ W`` (n x k margins) plus ``X.T @ A`` (d x k) with scipy, W and A dense with k
  columns: two streaming passes over X with k-vectors per entry, what any method that touches
  every sample and class once must read and write;
* epoch: one epoch of the driver's kernel over every sample and class (Crammer-Singer with its
  shrinking off, so that every (sample, class) is visited, from the point reached after three
  epochs; multinomial has no shrinking), through VectorSDCA.epoch as fastdual.train calls it;
* certificate: the k-class problem's shared certificate (P and D, V recomputed from the duals);
* per row: the epoch's seconds per sample, and the part of the epoch above the floor per sample
  (the kernel's own per-row work: the k-class step, its sort or its Newton iterations).

alpha = 1e-4, LIBLINEAR's intercept (a feature of value 1, penalised).
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.epoch_anatomy import min_time  # noqa: E402
from benchmarks.multiclass import SETS, load  # noqa: E402


def anatomy(X, y, strategy, repeats, alpha=1e-4):
    from fastdual._multiclass import build_vector_problem
    from fastdual._validation import check_labels, check_matrix
    from fastdual.solvers.vector_sdca import VectorSDCA

    matrix = check_matrix(X)
    classes, index = check_labels(y, matrix.n_samples)
    loss = "logistic" if strategy == "multinomial" else "hinge"
    problem = build_vector_problem(
        matrix, classes, index, strategy,
        dict(loss=loss, alpha=alpha, C=None, l1_ratio=0.0, fit_intercept=True,
             intercept_scaling=1.0, sample_weight=None, loss_params={},
             regularize_intercept=True))
    n, k = problem.n_samples, problem.n_classes
    driver = VectorSDCA(problem, 0, shrinking=False)
    for _ in range(3):
        driver.epoch()
    W = np.ascontiguousarray(np.random.default_rng(0).standard_normal((X.shape[1], k)))
    A = np.ascontiguousarray(np.random.default_rng(1).standard_normal((n, k)))
    floor = min_time(lambda: (X @ W, X.T @ A), repeats)
    epoch = min_time(driver.epoch, repeats)
    certificate = min_time(lambda: problem.certificate(driver.w, driver.duals), repeats)
    return dict(n=n, d=X.shape[1], k=k, nnz=X.nnz, floor=floor, epoch=epoch,
                certificate=certificate)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(SETS))
    parser.add_argument("--strategies", nargs="+", default=["multinomial", "crammer_singer"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print("| data | n x d, k | nnz | strategy | floor (ms) | epoch (ms) | epoch / floor "
          "| certificate / floor | epoch per row (us) | above the floor per row (us) |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        X, y, _, _ = load(name)
        for strategy in args.strategies:
            r = anatomy(X, y, strategy, args.repeats)
            print(f"| {name} | {r['n']} x {r['d']}, {r['k']} | {r['nnz']} | {strategy} "
                  f"| {1e3 * r['floor']:.2f} | {1e3 * r['epoch']:.2f} "
                  f"| {r['epoch'] / r['floor']:.2f} | {r['certificate'] / r['floor']:.2f} "
                  f"| {1e6 * r['epoch'] / r['n']:.2f} "
                  f"| {1e6 * (r['epoch'] - r['floor']) / r['n']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
