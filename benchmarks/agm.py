"""AGM (seed 004) measured: against SDCA, SPDC, Newton and L-BFGS, and the seed's own claims.

    python -m benchmarks.agm [--datasets a9a w8a ijcnn1 reuters_lasvm news20] [--budget 20]

Three tables, single-threaded, one run each (every run is capped at `budget` seconds; a capped
run is reported as "> budget"):

1. Logistic regression (the intercept a regularised feature) at alpha 1e-4 and 1e-6: seconds
   and passes over the data to a certified relative gap of 1e-4 for AGM (infinite and one
   memory, adaptive L), SDCA, SPDC and Newton, and for scipy's L-BFGS the seconds to a primal
   within 1e-4 of P* (P* from Newton at 1e-10; L-BFGS has no certificate). AGM's passes are two
   per trial of L (the gradient and the new point's image); SDCA's and SPDC's one per epoch
   plus the checks; Newton's its epochs (a few passes each; its iterations are listed).
2. The adaptive L (Algorithms 2 and 4) against the true L (power iteration to 1e-12): the
   median and the range of L_k / L over the run, trials per iteration, and the iterations to
   1e-4 with the adaptive and with the fixed L (the seed: L_k about 10% of L, about 10x fewer
   iterations).
3. The projection inside AGM's dual form (the hinge SVM with a free intercept): its share of
   the iteration's time, and ns per element.
"""
import argparse
import time
import warnings

import numpy as np
import scipy.optimize

import fastdual
from benchmarks.datasets import load
from benchmarks.timing import matvec_floor
from fastdual._problem import build_problem
from fastdual.solvers import SOLVERS, agm, solver_options
from fastdual.solvers.agm_forms import largest_eigenvalue

TARGET = 1e-4


class Budget:
    """A callback that stops training after `seconds`."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.start = time.perf_counter()

    def __call__(self, info):
        return time.perf_counter() - self.start < self.seconds


def count_trials():
    """Wrap AGM's engines to count the trials of L (each is two passes)."""
    counter = {"trials": 0, "iterations": 0}
    for engine in (agm.InfiniteMemory, agm.OneMemory):
        original = engine.step

        def step(self, original=original):
            original(self)
            counter["trials"] += self.search.trials
            counter["iterations"] += 1
        engine.step = step
    return counter


def logistic_objective(X1, y, alpha):
    n = X1.shape[0]

    def fun(w):
        z = y * (X1 @ w)
        value = np.mean(np.logaddexp(0.0, -z)) + 0.5 * alpha * w @ w
        grad = X1.T @ (-y * 0.5 * (1.0 - np.tanh(0.5 * z))) / n + alpha * w
        return value, grad
    return fun


def lbfgs_seconds(X, y, alpha, p_star, budget):
    import scipy.sparse as sp
    X1 = sp.hstack([X, np.ones((X.shape[0], 1))]).tocsr() if sp.issparse(X) else np.hstack(
        [X, np.ones((X.shape[0], 1))])
    fun = logistic_objective(X1, y, alpha)
    start = time.perf_counter()
    reached = {}

    def callback(intermediate_result):
        if "t" not in reached and intermediate_result.fun <= p_star * (1 + TARGET):
            reached["t"] = time.perf_counter() - start
            raise StopIteration
        if time.perf_counter() - start > budget:
            raise StopIteration

    scipy.optimize.minimize(fun, np.zeros(X1.shape[1]), jac=True, method="L-BFGS-B",
                            callback=callback, options={"maxiter": 100_000, "gtol": 0.0,
                                                        "ftol": 0.0})
    return reached.get("t")


def run_solvers(name, X, y, alpha, budget, counter, floor):
    kwargs = dict(loss="logistic", alpha=alpha, tol=TARGET, max_epochs=1_000_000)
    p_star = fastdual.train(X, y, loss="logistic", alpha=alpha, solver="newton", tol=1e-10,
                            max_epochs=10_000).primal_
    rows = {}
    for label, options in (("agm", dict(solver="agm")),
                           ("agm-1", dict(solver="agm", memory="one")),
                           ("sdca", dict(solver="sdca")), ("spdc", dict(solver="spdc")),
                           ("newton", dict(solver="newton"))):
        counter["trials"] = counter["iterations"] = 0
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            model = fastdual.train(X, y, callback=Budget(budget), **kwargs, **options)
        seconds = time.perf_counter() - start
        checks = len(model.history_)
        passes = (2 * counter["trials"] if label.startswith("agm") else model.n_epochs_ + checks)
        rows[label] = {"seconds": seconds, "converged": model.converged_, "passes": passes,
                       "epochs": model.n_epochs_, "gap": model.relative_gap_}
    rows["lbfgs"] = {"seconds": lbfgs_seconds(X, y, alpha, p_star, budget)}
    return rows


def adaptive_claims(name, X, y, alpha, budget):
    problem = build_problem(X, y, loss="logistic", alpha=alpha, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    true_L = largest_eigenvalue(problem, 2000, rtol=1e-12) / problem.loss.gamma
    out = {"true_L": true_L}
    for adaptive in (True, False):
        driver = SOLVERS["agm"](problem, solver_options(SOLVERS["agm"],
                                                        {"adaptive": adaptive}), 0)
        ratios, trials = [], []
        start = time.perf_counter()
        iterations = None
        for k in range(1, 1_000_000):
            driver.epoch()
            ratios.append(driver.search.L / true_L)
            trials.append(driver.search.trials)
            if k % 10 == 0:
                w, duals = driver.point()
                primal, dual = problem.primal_dual(w, duals)
                if primal - dual <= TARGET * primal:
                    iterations = k
                    break
            if time.perf_counter() - start > budget:
                break
        out["adaptive" if adaptive else "fixed"] = {
            "iterations": iterations, "median_ratio": float(np.median(ratios)),
            "min_ratio": float(np.min(ratios)), "max_ratio": float(np.max(ratios)),
            "trials": float(np.mean(trials))}
    return out


def projection_share(name, X, y, iterations=200):
    problem = build_problem(X, y, loss="hinge", alpha=1.0 / X.shape[0], C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={}, regularize_intercept=False)
    driver = SOLVERS["agm"](problem, solver_options(SOLVERS["agm"], {}), 0)
    spent = [0.0]
    original = driver.form.prox

    def timed(*args):
        start = time.perf_counter()
        result = original(*args)
        spent[0] += time.perf_counter() - start
        return result
    driver.form.prox = timed
    start = time.perf_counter()
    for _ in range(iterations):
        driver.epoch()
    total = time.perf_counter() - start
    return {"share": spent[0] / total,
            "ns_per_element": spent[0] / iterations / X.shape[0] * 1e9}


def fmt(row):
    if row.get("seconds") is None:
        return "not reached"
    text = f"{row['seconds']:.2f}"
    if "converged" in row and not row["converged"]:
        text = f"> {row['seconds']:.0f} ({row['gap']:.0e})"
    return text + (f" / {row['passes']}" if "passes" in row else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["a9a", "w8a", "ijcnn1", "reuters_lasvm", "news20"])
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-4, 1e-6])
    parser.add_argument("--budget", type=float, default=20.0)
    args = parser.parse_args(argv)
    counter = count_trials()
    print("## 1. Logistic, seconds / passes to a certified relative gap 1e-4 (L-BFGS: to "
          "P* (1 + 1e-4), seconds)\n")
    print("| data | alpha | floor (ms) | agm | agm one-memory | sdca | spdc | newton | "
          "L-BFGS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        X, y = load(name)
        floor = matvec_floor(X)["floor"]
        for alpha in args.alphas:
            rows = run_solvers(name, X, y, alpha, args.budget, counter, floor)
            print(f"| {name} | {alpha:g} | {floor * 1e3:.1f} | " + " | ".join(
                fmt(rows[k]) for k in ("agm", "agm-1", "sdca", "spdc", "newton", "lbfgs"))
                + " |", flush=True)
    print("\n## 2. The adaptive L (logistic, alpha 1e-4)\n")
    print("| data | L_k / L median (min-max) | trials per iteration | iterations to 1e-4: "
          "adaptive / fixed L |")
    print("|---|---|---|---|")
    for name in args.datasets:
        X, y = load(name)
        claims = adaptive_claims(name, X, y, 1e-4, args.budget)
        a, f = claims["adaptive"], claims["fixed"]
        print(f"| {name} | {a['median_ratio']:.2f} ({a['min_ratio']:.2f}-{a['max_ratio']:.2f}) "
              f"| {a['trials']:.2f} | {a['iterations']} / {f['iterations']} |", flush=True)
    print("\n## 3. The projection in AGM's dual form (hinge, free intercept, C = 1)\n")
    print("| data | share of the iteration | ns per element |")
    print("|---|---|---|")
    for name in args.datasets:
        X, y = load(name)
        share = projection_share(name, X, y)
        print(f"| {name} | {share['share']:.0%} | {share['ns_per_element']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
