"""The exact unregularized intercept for the hinge-loss SVM: fastdual against the two ways users
get one today.

    python -m benchmarks.free_intercept [--datasets a9a w8a ijcnn1 news20] [--C 1] [--repeats 3]

For each data set (rows at unit norm, a seeded 80/20 split into training and test rows) the
problem is the SVM with bias, P(w, b) = 1/2 ||w||^2 + C sum_i max(0, 1 - y_i (x_i . w + b)),
i.e. fastdual's alpha = 1 / (C n) with regularize_intercept=False. Its optimum P* comes from
fastdual's SDCA at a certified relative gap of 1e-10. Then, single-threaded:

- fastdual (SDCA with the free intercept, and AGM's dual with bias): time to a certified
  relative gap of 1e-4 (which bounds the suboptimality), median of `repeats` runs;
- scikit-learn's SVC(kernel="linear") (libsvm, which solves exactly this problem): its tol
  lowered 1e-3, 1e-4, 1e-5 until its objective is within 1e-4 of P*; one run each (minutes);
- LIBLINEAR's usual workaround, a large constant feature (-s 3 -B 100): time at its default
  -e 0.1, the true (free-intercept) suboptimality of its (w, b) and how far its b is from b*;
- the test accuracy of the exact model, of LIBLINEAR with its default regularized intercept
  (-B 1) and with -B 100.

Ratios are against the one-pass floor (X w + X^T a, scipy) measured in the same run.
"""
import argparse
import json
import os
import time

import numpy as np

import fastdual
from benchmarks.datasets import load
from benchmarks.timing import matvec_floor

TARGET = 1e-4
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def split(X, y, seed=0, test=0.2):
    order = np.random.default_rng(seed).permutation(X.shape[0])
    cut = int(round(X.shape[0] * (1 - test)))
    return X[order[:cut]], y[order[:cut]], X[order[cut:]], y[order[cut:]]


def objective(X, y, w, b, C):
    return 0.5 * float(w @ w) + C * float(np.sum(np.maximum(0.0, 1.0 - y * (X @ w + b))))


def accuracy(X, y, w, b):
    return float(np.mean(np.where(X @ w + b > 0, 1.0, -1.0) == y))


def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), out


def liblinear(X, y, C, B, eps):
    from liblinear import liblinearutil
    prob = liblinearutil.problem(y, X)
    start = time.perf_counter()
    model = liblinearutil.train(prob, f"-s 3 -c {C:.17g} -B {B:g} -e {eps:g} -q")
    seconds = time.perf_counter() - start
    d = X.shape[1]
    raw = np.array([model.w[j] for j in range(d + 1)])
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    return seconds, sign * raw[:d], sign * raw[d] * B


def run(name, C, repeats, svc_tols=(1e-3, 1e-4, 1e-5)):
    from sklearn.svm import SVC
    X, y = load(name)
    Xtr, ytr, Xte, yte = split(X, y)
    n = Xtr.shape[0]
    alpha = 1.0 / (C * n)
    kwargs = dict(loss="hinge", alpha=alpha, regularize_intercept=False)
    exact = fastdual.train(Xtr, ytr, solver="sdca", tol=1e-10, max_epochs=100_000, **kwargs)
    p_star = objective(Xtr, ytr, exact.coef_, exact.intercept_, C)
    floor = matvec_floor(Xtr)["floor"]
    row = {"dataset": name, "n_train": n, "n_features": Xtr.shape[1], "C": C,
           "p_star": p_star, "b_star": exact.intercept_, "floor_seconds": floor,
           "exact_gap": exact.relative_gap_}
    for label, solver in (("sdca", "sdca"), ("agm", "agm")):
        seconds, model = timed(lambda: fastdual.train(Xtr, ytr, solver=solver, tol=TARGET,
                                                      max_epochs=200_000, **kwargs), repeats)
        row[label] = {"seconds": seconds, "epochs": model.n_epochs_,
                      "certified_gap": model.relative_gap_,
                      "subopt": objective(Xtr, ytr, model.coef_, model.intercept_, C) / p_star
                      - 1.0}
    row["svc"] = []
    for tol in svc_tols:
        start = time.perf_counter()
        svc = SVC(kernel="linear", C=C, tol=tol, cache_size=2000).fit(Xtr, ytr)
        seconds = time.perf_counter() - start
        coef = np.asarray(svc.coef_.todense() if hasattr(svc.coef_, "todense")
                          else svc.coef_).ravel()
        subopt = objective(Xtr, ytr, coef, svc.intercept_[0], C) / p_star - 1.0
        row["svc"].append({"tol": tol, "seconds": seconds, "subopt": subopt,
                           "intercept": float(svc.intercept_[0])})
        print(f"  {name}: SVC tol={tol:g}: {seconds:.1f} s, suboptimality {subopt:.2e}",
              flush=True)
        if subopt <= TARGET:
            break
    for B, eps in ((1.0, 0.1), (100.0, 0.1), (100.0, 0.001)):
        seconds, w, b = liblinear(Xtr, ytr, C, B, eps)
        row[f"liblinear_B{B:g}" + ("" if eps == 0.1 else f"_e{eps:g}")] = {
            "seconds": seconds, "free_subopt": objective(Xtr, ytr, w, b, C) / p_star - 1.0,
            "intercept": b, "accuracy": accuracy(Xte, yte, w, b)}
    row["exact_accuracy"] = accuracy(Xte, yte, exact.coef_, exact.intercept_)
    return row


def table(rows):
    lines = ["| data | n x d | fastdual sdca to 1e-4 (s, x floor) | agm (s) | SVC to 1e-4 (s) "
             "| SVC / sdca | LIBLINEAR -B 100 -e 0.1; -e 0.001: s, true subopt, b - b* | "
             "test acc. exact / -B 1 / -B 100 (-e 0.001) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        svc = next((s for s in r["svc"] if s["subopt"] <= TARGET), None)
        svc_text = (f"{svc['seconds']:.1f} (tol {svc['tol']:g})" if svc else
                    f"> {r['svc'][-1]['seconds']:.1f} (subopt {r['svc'][-1]['subopt']:.1e} "
                    f"at tol {r['svc'][-1]['tol']:g})")
        ratio = (f"{svc['seconds'] / r['sdca']['seconds']:.0f}x" if svc else
                 f"> {r['svc'][-1]['seconds'] / r['sdca']['seconds']:.0f}x")
        lb, tight = r["liblinear_B100"], r["liblinear_B100_e0.001"]
        lines.append(
            f"| {r['dataset']} | {r['n_train']} x {r['n_features']} | "
            f"{r['sdca']['seconds']:.3f} ({r['sdca']['seconds'] / r['floor_seconds']:.0f}) | "
            f"{r['agm']['seconds']:.2f} | {svc_text} | {ratio} | "
            + "; ".join(f"{e['seconds']:.2f}, {e['free_subopt']:.1e}, "
                        f"{e['intercept'] - r['b_star']:+.2e}" for e in (lb, tight))
            + f" | {r['exact_accuracy']:.4f} / {r['liblinear_B1']['accuracy']:.4f} / "
            f"{tight['accuracy']:.4f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["a9a", "w8a", "ijcnn1", "news20"])
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    for name in args.datasets:
        print(f"{name} ...", flush=True)
        rows.append(run(name, args.C, args.repeats))
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "free_intercept.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(table(rows))


if __name__ == "__main__":
    main()
