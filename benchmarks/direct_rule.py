"""Rule 4 with the direct solve: Newton against SDCA where Newton's system is solved directly.

    python -m benchmarks.direct_rule [--datasets a9a a9a.t ijcnn1 ijcnn1.t mushrooms letter
                                      satimage pendigits w8a] [--C 0.03 0.1 0.3 1 3 10]
                                     [--losses logistic squared_hinge smooth_hinge]
                                     [--kappa-range 0.05 20] [--repeats 3] [--json FILE]

Time to a certified 1e-4 relative duality gap (train(tol=1e-4)), LIBLINEAR's intercept
feature (fit_intercept=True, intercept_scaling=1), one thread, of solver="newton" and
solver="sdca" (driver defaults: shrinking for the hinge types), on each set's rows as
distributed ("raw") and scaled to unit norm ("unit"), for every C of the grid where
Newton's direct solve pays (newton.direct_pays) and kappa = R^2 / (gamma l2 n) is within
--kappa-range. Multiclass sets (letter, satimage, pendigits) are their first class against
the rest. Prints every case, then Newton / SDCA by loss and kappa bin: the geo-mean, the
range and the number of cases where Newton was the faster. These bins set the rule's
DIRECT_NEWTON_KAPPA (docs/solvers/auto.md, "Rule 4 with the direct solve").
"""
import argparse
import json
import lzma
import os
import warnings

import numpy as np
import scipy.sparse as sp

from benchmarks.datasets import data_dir, normalize_rows
from benchmarks.timing import timed_train
from fastdual._problem import build_problem
from fastdual.solvers import auto, newton

FILES = {"a9a": "a9a.xz", "a9a.t": "a9a.t.xz", "ijcnn1": "ijcnn1.xz",
         "ijcnn1.t": "ijcnn1.t.xz", "mushrooms": "mushrooms.xz",
         "letter": "letter.scale.xz", "satimage": "satimage.scale.xz",
         "pendigits": "pendigits.xz", "w8a": "w8a.xz"}
BINS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 4.0, 6.0, 10.0, 20.0)


def load_binary(name, n_features=None):
    """(X, y) of a set as distributed: CSR float64, labels -1/+1; a set with more than two
    labels is its smallest label against the rest."""
    from sklearn.datasets import load_svmlight_file
    with lzma.open(os.path.join(data_dir(), FILES[name])) as f:
        X, labels = load_svmlight_file(f, zero_based=False, n_features=n_features)
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    values = np.unique(labels)
    if set(values.tolist()) <= {-1.0, 1.0}:
        y = np.where(labels > 0, 1.0, -1.0)
    else:
        y = np.where(labels == values[0], 1.0, -1.0)
    return X, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(FILES))
    parser.add_argument("--C", nargs="+", type=float, default=[0.03, 0.1, 0.3, 1.0, 3.0, 10.0])
    parser.add_argument("--losses", nargs="+",
                        default=["logistic", "squared_hinge", "smooth_hinge"])
    parser.add_argument("--kappa-range", nargs=2, type=float, default=[0.05, 20.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    print("| data | rows | loss | C | kappa | newton (s) | sdca (s) | newton / sdca |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        raw = load_binary(name)
        for scaling, (X, y) in (("raw", raw), ("unit", (normalize_rows(raw[0]), raw[1]))):
            for loss in args.losses:
                for C in args.C:
                    problem = build_problem(X, y, loss=loss, alpha=None, C=C, l1_ratio=0.0,
                                            fit_intercept=True, intercept_scaling=1.0,
                                            sample_weight=None, loss_params={})
                    kappa = auto.condition_number(problem)
                    low, high = args.kappa_range
                    if not (low <= kappa <= high and newton.direct_pays(problem)):
                        continue
                    common = dict(loss=loss, C=C, fit_intercept=True, intercept_scaling=1.0)
                    t_newton, ok_newton, _ = timed_train(X, y, args.repeats, solver="newton",
                                                         **common)
                    t_sdca, ok_sdca, _ = timed_train(X, y, args.repeats, solver="sdca",
                                                     **common)
                    ratio = t_newton / t_sdca
                    print(f"| {name} | {scaling} | {loss} | {C:g} | {kappa:.3g} | "
                          f"{t_newton:.4f}{'' if ok_newton else '*'} | "
                          f"{t_sdca:.4f}{'' if ok_sdca else '*'} | {ratio:.2f} |", flush=True)
                    rows.append(dict(dataset=name, rows=scaling, loss=loss, C=C, kappa=kappa,
                                     newton=t_newton, sdca=t_sdca, newton_converged=ok_newton,
                                     sdca_converged=ok_sdca))
    print()
    print("| loss | kappa | cases | Newton / SDCA, geo-mean (min - max) | Newton faster |")
    print("|---|---|---:|---|---:|")
    for loss in args.losses:
        for low, high in zip(BINS[:-1], BINS[1:]):
            ratios = [r["newton"] / r["sdca"] for r in rows
                      if r["loss"] == loss and low <= r["kappa"] < high]
            if not ratios:
                continue
            geo = float(np.exp(np.mean(np.log(ratios))))
            print(f"| {loss} | {low:g} - {high:g} | {len(ratios)} | {geo:.2f} "
                  f"({min(ratios):.2f} - {max(ratios):.2f}) | "
                  f"{sum(r < 1.0 for r in ratios)} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
