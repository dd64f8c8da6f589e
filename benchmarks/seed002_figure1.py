"""Seed 002 (SPDC), Figure 1: synthetic ridge regression, log suboptimality against passes.

    python -m benchmarks.seed002_figure1 [--lambdas 1e-3 1e-4 1e-5 1e-6] [--passes 300]

The seed's setup (Sec. 7.1): n = d = 500, rows x_i ~ N(0, Sigma) with Sigma_jj = j^-2 (diagonal),
targets y = X w* + N(0, 1) noise with w* the all-ones vector, the ridge objective
P(w) = (1/n) sum 1/2 (x_i . w - y_i)^2 + lambda/2 ||w||^2, P* from the closed form. Methods, each
counted in passes over the data (one per epoch, or per full gradient):

* fastdual SPDC (Algorithm 1, uniform sampling, step sizes of eq. 12) and SDCA (Option I,
  permutation sampling), read from their per-epoch history (check_every=1);
* AFG: Nesterov's accelerated full gradient for an L-smooth, lambda-strongly convex function,
  constant momentum (sqrt(L) - sqrt(lambda)) / (sqrt(L) + sqrt(lambda)), L = ||X||_2^2 / n + lambda;
* L-BFGS (scipy, memory 30 as in the seed), one pass per function-and-gradient evaluation.

Prints, per lambda and method, the passes needed to reach P - P* <= 1e-6 (relative to P*) and
writes benchmarks/results/seed002_figure1.png.
"""
import argparse
import os
import sys
import warnings

import numpy as np

TARGET = 1e-6


def make_data(n=500, d=500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.arange(1, d + 1)          # Sigma_jj = j^-2
    y = X @ np.ones(d) + rng.standard_normal(n)
    return X, y


def objective(X, y, lam, w):
    r = X @ w - y
    return 0.5 * np.mean(r * r) + 0.5 * lam * (w @ w)


def optimum(X, y, lam):
    n, d = X.shape
    w = np.linalg.solve(X.T @ X / n + lam * np.eye(d), X.T @ y / n)
    return objective(X, y, lam, w)


def fastdual_curve(X, y, lam, solver, passes):
    import fastdual
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fastdual.train(X, y, loss="squared", alpha=lam, fit_intercept=False, tol=0.0,
                               max_epochs=passes, check_every=1, solver=solver,
                               random_state=0)
    return [h["primal"] for h in model.history_]


def afg_curve(X, y, lam, passes):
    n, d = X.shape
    L = np.linalg.norm(X, 2) ** 2 / n + lam
    momentum = (np.sqrt(L) - np.sqrt(lam)) / (np.sqrt(L) + np.sqrt(lam))
    w = z = np.zeros(d)
    values = []
    for _ in range(passes):
        grad = X.T @ (X @ z - y) / n + lam * z
        w_next = z - grad / L
        z = w_next + momentum * (w_next - w)
        w = w_next
        values.append(objective(X, y, lam, w))
    return values


def lbfgs_curve(X, y, lam, passes):
    from scipy.optimize import minimize
    n, d = X.shape
    values = []

    def f(w):
        r = X @ w - y
        values.append(0.5 * np.mean(r * r) + 0.5 * lam * (w @ w))
        return values[-1], X.T @ r / n + lam * w

    minimize(f, np.zeros(d), jac=True, method="L-BFGS-B",
             options={"maxcor": 30, "maxfun": passes, "maxiter": passes, "ftol": 0.0,
                      "gtol": 0.0})
    return np.minimum.accumulate(values)[:passes]


def passes_to(values, p_star, target=TARGET):
    sub = (np.asarray(values) - p_star) / abs(p_star)
    hit = np.nonzero(sub <= target)[0]
    return int(hit[0]) + 1 if hit.size else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lambdas", type=float, nargs="+", default=[1e-3, 1e-4, 1e-5, 1e-6])
    parser.add_argument("--passes", type=int, default=300)
    parser.add_argument("--out", default=os.path.join("benchmarks", "results"))
    args = parser.parse_args(argv)
    X, y = make_data()
    methods = {
        "SPDC": lambda lam: fastdual_curve(X, y, lam, "spdc", args.passes),
        "SDCA": lambda lam: fastdual_curve(X, y, lam, "sdca", args.passes),
        "AFG": lambda lam: afg_curve(X, y, lam, args.passes),
        "L-BFGS": lambda lam: lbfgs_curve(X, y, lam, args.passes),
    }
    curves = {}
    print(f"| lambda | lambda n | " + " | ".join(f"{m} passes to {TARGET:g}" for m in methods)
          + " |")
    print("|---:|---:|" + "---:|" * len(methods))
    for lam in args.lambdas:
        p_star = optimum(X, y, lam)
        row = []
        for name, run in methods.items():
            values = run(lam)
            curves[(lam, name)] = (values, p_star)
            hit = passes_to(values, p_star)
            row.append(str(hit) if hit is not None else f"> {len(values)}")
        print(f"| {lam:g} | {lam * X.shape[0]:g} | " + " | ".join(row) + " |", flush=True)
    try:
        from .plots import semilogy_panels
    except ImportError:
        print("matplotlib is not installed: no figure", file=sys.stderr)
        return 0
    panels = [(f"lambda = {lam:g}",
               {name: (np.asarray(curves[(lam, name)][0]) - curves[(lam, name)][1])
                / abs(curves[(lam, name)][1]) for name in methods})
              for lam in args.lambdas]
    print("wrote", semilogy_panels(panels, "passes over the data", "(P - P*) / P*",
                                   os.path.join(args.out, "seed002_figure1.png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
