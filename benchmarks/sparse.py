"""Sparse models: time to 1e-4 and 1e-6 relative suboptimality of fastdual's cd against
skglm, celer, scikit-learn, LIBLINEAR (-s 5 / -s 6), cyanure and glum (those installed), one
thread, medians of repeats.

    python -m benchmarks.sparse [--datasets news20 reuters_lasvm a9a rcv1like dense]
                                [--problems lasso l1_logistic l1_squared_hinge enet_logistic]
                                [--scales 10 100 1000] [--repeats 3] [--json out.json]

The objective is the same for every solver (no intercept, rows of X at unit norm):

    P(w) = (1/n) sum_i phi(y_i, x_i . w) + alpha (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)

with phi the squared loss 1/2 (y - z)^2 ("lasso", on the +-1 labels, or the dense set's
regression target), logistic ("l1_logistic", l1_ratio 1; "enet_logistic", l1_ratio 0.5) or the
squared hinge max(0, 1 - y z)^2 ("l1_squared_hinge"), at alpha = alpha_max / scale, alpha_max =
||X^T phi'(y, 0)||_inf / (n l1_ratio) the smallest alpha at which w = 0 is optimal. Each peer's
parameters are mapped onto it (C = 1 / (n alpha) for LIBLINEAR's and scikit-learn's C; glum's
binomial deviance is twice the logistic loss, its 1/(2n) scaling makes them equal; cyanure's
squared hinge is half fastdual's, so its lambda is halved; glum runs where d <= 10,000: its
IRLS solver forms a dense d x d Hessian, and at alpha_max / 100 and above: it takes 30 s and more
a run below), and the
mappings are checked first on a small problem: a peer whose best objective there is not within
1e-6 of fastdual's certified optimum is dropped from the run with a line saying so.

Every solver runs from scratch at growing budgets (fastdual: max_epochs with tol 0, its only
certificate the last one; the others: their iteration budgets; LIBLINEAR: its tolerance -e,
from 1e-1 down); a budget's time is the median of `repeats` runs (one when a run takes more
than a second), P is computed here outside the timing, and the time to a target is that of the
first budget whose P reaches it (or a larger budget's, if the machine's noise made it faster).
P* is the best P of all runs. "fastdual (certified)" is
train(tol=target): the time until its own duality gap proves the target. The floor is one
X @ w plus one X.T @ r (scipy / numpy), measured in the same run. Every solver gets X as
loaded (CSR or C-ordered) and pays its own conversions.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.cd import correlated_dense  # noqa: E402
from benchmarks.datasets import load, make_sparse_text, normalize_rows  # noqa: E402
from benchmarks.timing import matvec_floor, timed_fit as timed  # noqa: E402

TARGETS = (1e-4, 1e-6)
BUDGETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
           2048, 4096)
TOLERANCES = tuple(10.0 ** -k for k in range(1, 13))     # LIBLINEAR's -e ladder
GLUM_MAX_FEATURES = 10_000    # glum's IRLS forms a dense d x d Hessian,
GLUM_MAX_SCALE = 100          # and takes 30 s and more a run at alpha_max / 1000
PROBLEMS = {"lasso": ("squared", 1.0), "l1_logistic": ("logistic", 1.0),
            "l1_squared_hinge": ("squared_hinge", 1.0), "enet_logistic": ("logistic", 0.5)}


# -- the objective -----------------------------------------------------------------------------

def losses(loss, y, z):
    if loss == "squared":
        return 0.5 * (y - z) ** 2
    if loss == "logistic":
        return np.logaddexp(0.0, -y * z)
    return np.maximum(0.0, 1.0 - y * z) ** 2


def primal(X, y, w, loss, alpha, l1_ratio):
    z = X @ w
    return (float(np.mean(losses(loss, y, z))) + alpha * l1_ratio * float(np.abs(w).sum())
            + 0.5 * alpha * (1.0 - l1_ratio) * float(w @ w))


def alpha_max(X, y, loss, l1_ratio):
    """fastdual.alpha_max without an intercept: the smallest alpha at which w = 0 is optimal."""
    import fastdual
    return fastdual.alpha_max(X, y, loss=loss, l1_ratio=l1_ratio, fit_intercept=False)


# -- the solvers: name -> fit(X, y, budget) -> coef --------------------------------------------

def solvers(loss, l1_ratio, alpha, n):
    import fastdual
    C = 1.0 / (n * alpha)
    out = {}

    def fastdual_fit(X, y, budget, tol=0.0):
        return fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio, solver="cd",
                              fit_intercept=False, tol=tol, max_epochs=budget).coef_
    # (its epochs are outer steps of several passes each: successive budgets below one step's
    # passes stop at the same point, which is not a solver stopping on its own criterion)
    fastdual_fit.repeats_points = True
    out["fastdual cd"] = fastdual_fit

    from sklearn.linear_model import Lasso, LogisticRegression
    if loss == "squared":
        def sklearn_cd(X, y, budget):
            return Lasso(alpha=alpha, fit_intercept=False, tol=0.0, max_iter=budget,
                         precompute=False).fit(X, y).coef_
        out["scikit-learn cd"] = sklearn_cd
    if loss == "logistic":
        def sklearn_logistic(solver):
            def fit(X, y, budget):
                return LogisticRegression(l1_ratio=l1_ratio, C=C, solver=solver, tol=1e-15,
                                          max_iter=budget, fit_intercept=False
                                          ).fit(X, y).coef_[0]
            return fit
        out["scikit-learn saga"] = sklearn_logistic("saga")
        if l1_ratio == 1.0:
            out["scikit-learn liblinear"] = sklearn_logistic("liblinear")
    try:
        from liblinear import liblinearutil as ll
        kind = {("logistic", 1.0): 6, ("squared_hinge", 1.0): 5}.get((loss, l1_ratio))
        if kind is not None:
            def liblinear_fit(X, y, tolerance):
                model = ll.train(y, sp.csr_matrix(X), f"-s {kind} -c {C!r} -e {tolerance!r} -q")
                w = np.array([model.w[j] for j in range(X.shape[1])])
                # (LIBLINEAR's first label is its positive class)
                return w if model.get_labels()[0] == 1 else -w
            liblinear_fit.tolerances = True
            out[f"LIBLINEAR -s {kind}"] = liblinear_fit
    except ImportError:
        pass
    try:
        import celer
        if loss == "squared" and l1_ratio == 1.0:
            def celer_lasso(X, y, budget):
                return celer.Lasso(alpha=alpha, fit_intercept=False, tol=1e-14, max_iter=budget,
                                   max_epochs=100000).fit(X, y).coef_
            out["celer"] = celer_lasso
        if loss == "logistic" and l1_ratio == 1.0:
            def celer_logistic(X, y, budget):
                return celer.LogisticRegression(C=C, fit_intercept=False, tol=1e-14,
                                                max_iter=budget, max_epochs=100000
                                                ).fit(X, y).coef_[0]
            out["celer"] = celer_logistic
    except ImportError:
        pass
    try:
        import skglm
        from skglm import GeneralizedLinearEstimator
        from skglm.datafits import Logistic
        from skglm.penalties import L1_plus_L2
        if loss == "squared" and l1_ratio == 1.0:
            def skglm_lasso(X, y, budget):
                return skglm.Lasso(alpha=alpha, fit_intercept=False, tol=1e-14,
                                   max_iter=budget).fit(X, y).coef_
            out["skglm"] = skglm_lasso
        if loss == "logistic":
            def skglm_logistic(X, y, budget):
                if l1_ratio == 1.0:
                    return skglm.SparseLogisticRegression(
                        alpha=alpha, fit_intercept=False, tol=1e-14, max_iter=budget
                    ).fit(X, y).coef_[0]
                from skglm.solvers import AndersonCD
                estimator = GeneralizedLinearEstimator(
                    Logistic(), L1_plus_L2(alpha, l1_ratio),
                    AndersonCD(max_iter=budget, tol=1e-14, fit_intercept=False))
                return estimator.fit(X, y).coef_.ravel()
            out["skglm"] = skglm_logistic
    except ImportError:
        pass
    try:
        from cyanure.estimators import Classifier, Regression
        penalty = "l1" if l1_ratio == 1.0 else "elasticnet"
        lambdas = dict(lambda_1=alpha * l1_ratio, lambda_2=alpha * (1.0 - l1_ratio))
        if loss in ("squared", "logistic"):
            def cyanure_fit(X, y, budget):
                kind = (dict(loss="logistic") if loss == "logistic" else {})
                estimator = (Classifier if loss == "logistic" else Regression)(
                    penalty=penalty, fit_intercept=False, tol=1e-15, max_iter=budget,
                    verbose=False, n_threads=1, **kind, **lambdas)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return np.ravel(estimator.fit(X, y).get_weights())[:X.shape[1]]
            out["cyanure"] = cyanure_fit
        if loss == "squared_hinge":
            # (cyanure's squared hinge is max(0, 1 - y z)^2 / 2: the objective halved)
            def cyanure_squared_hinge(X, y, budget):
                estimator = Classifier(loss="sqhinge", penalty=penalty, fit_intercept=False,
                                       tol=1e-15, max_iter=budget, verbose=False, n_threads=1,
                                       **{k: v / 2 for k, v in lambdas.items()})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return np.ravel(estimator.fit(X, y).get_weights())[:X.shape[1]]
            out["cyanure"] = cyanure_squared_hinge
    except ImportError:
        pass
    try:
        from glum import GeneralizedLinearRegressor
        if loss in ("squared", "logistic"):
            def glum_fit(X, y, budget):
                target = y if loss == "squared" else (y > 0).astype(float)
                estimator = GeneralizedLinearRegressor(
                    family="normal" if loss == "squared" else "binomial", alpha=alpha,
                    l1_ratio=l1_ratio, fit_intercept=False, max_iter=budget,
                    gradient_tol=1e-14, solver="irls-cd")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return estimator.fit(X, target).coef_
            out["glum"] = glum_fit
    except ImportError:
        pass
    return out


# -- curves ------------------------------------------------------------------------------------

def curve(fit, X, y, objective, repeats, max_seconds, p_floor):
    ladder = TOLERANCES if getattr(fit, "tolerances", False) else BUDGETS
    points, spent = [], 0.0
    for budget in ladder:
        try:
            seconds, coef = timed(fit, X, y, budget, repeats)
        except (MemoryError, ValueError, RuntimeError) as error:
            print(f"  ({getattr(fit, '__name__', fit)} failed: {type(error).__name__}: "
                  f"{str(error)[:120]})", flush=True)
            break
        spent += seconds
        points.append((budget, seconds, objective(coef)))
        if points[-1][2] <= p_floor * (1 + 1e-9):
            break
        if seconds > max_seconds / 3 or spent > max_seconds:
            break
        if (len(points) >= 3 and points[-1][2] == points[-2][2] == points[-3][2]
                and not getattr(fit, "repeats_points", False)):
            break
    return points


def first_time(points, p_star, target):
    """The least time of the budgets reaching the target: a larger budget is never faster but
    for the machine's noise, which this takes out alike for every solver."""
    times = [seconds for _, seconds, p in points if (p - p_star) / p_star <= target]
    return min(times) if times else None


def reference(X, y, loss, l1_ratio, alpha, tol=1e-12, seconds=60.0):
    """fastdual's certified optimum to tol, or its best point after `seconds` (P* is the best
    P of every run anyway: this only tells the curves when to stop)."""
    import fastdual
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio, solver="cd",
                              fit_intercept=False, tol=tol, max_epochs=100000,
                              callback=lambda info: time.perf_counter() - start < seconds)


def check_mappings(problem, seed=0):
    """The peers whose best objective on a small problem is within 1e-6 of the optimum
    (fastdual's, certified to 1e-12): the others' parameters do not map onto the objective."""
    loss, l1_ratio = PROBLEMS[problem]
    rng = np.random.default_rng(seed)
    X = normalize_rows(rng.standard_normal((200, 50)))
    y = np.where(X @ rng.standard_normal(50) + 0.3 * rng.standard_normal(200) > 0, 1.0, -1.0)
    alpha = alpha_max(X, y, loss, l1_ratio) / 10
    p_star = primal(X, y, reference(X, y, loss, l1_ratio, alpha).coef_, loss, alpha, l1_ratio)
    good, bad = [], []
    for name, fit in solvers(loss, l1_ratio, alpha, X.shape[0]).items():
        budget = TOLERANCES[-1] if getattr(fit, "tolerances", False) else BUDGETS[-1]
        try:
            _, coef = timed(fit, X, y, budget, 1)
            gap = (primal(X, y, coef, loss, alpha, l1_ratio) - p_star) / p_star
        except Exception as error:  # noqa: BLE001 - a peer's failure is reported, not fatal
            gap = f"{type(error).__name__}: {error}"
        (good if isinstance(gap, float) and gap <= 1e-6 else bad).append((name, gap))
    return [name for name, _ in good], bad


# -- one case ----------------------------------------------------------------------------------

def run_case(name, X, y, problem, scale, repeats, max_seconds, peers):
    import fastdual
    loss, l1_ratio = PROBLEMS[problem]
    n = X.shape[0]
    alpha = alpha_max(X, y, loss, l1_ratio) / scale
    fits = {k: v for k, v in solvers(loss, l1_ratio, alpha, n).items() if k in peers}
    small = (X[:50], y[:50])
    for key in ("celer", "skglm"):          # numba's compilation outside the timing
        if key in fits:
            timed(fits[key], *small, 2, 1)

    def objective(coef):
        return primal(X, y, np.asarray(coef, dtype=np.float64), loss, alpha, l1_ratio)

    tight = reference(X, y, loss, l1_ratio, alpha, tol=1e-11)
    p_ref = objective(tight.coef_)
    if X.shape[1] > GLUM_MAX_FEATURES or scale > GLUM_MAX_SCALE:
        fits.pop("glum", None)
    curves = {key: curve(fit, X, y, objective, repeats, max_seconds, p_ref)
              for key, fit in fits.items()}
    curves = {key: points for key, points in curves.items() if points}
    p_star = min([p_ref] + [p for points in curves.values() for _, _, p in points])
    rows = [(key, [first_time(points, p_star, t) for t in TARGETS],
             min(p for _, _, p in points) / p_star - 1.0) for key, points in curves.items()]
    certified = []
    for target in TARGETS:
        times, model = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio,
                                       solver="cd", fit_intercept=False, tol=target,
                                       max_epochs=100000)
            times.append(time.perf_counter() - start)
            if times[0] > 1.0:
                break
        certified.append(float(np.median(times)) if model.relative_gap_ <= target else None)
    rows.append(("fastdual cd (certified)", certified, None))
    return {"case": f"{name} {problem} /{scale:g}", "dataset": name, "problem": problem,
            "scale": scale, "rows": rows, "floor": matvec_floor(X)["floor"],
            "support": int(np.count_nonzero(tight.coef_)), "p_star": p_star}


def dataset(name):
    if name == "dense":
        X, y = correlated_dense()
        return X, y, np.where(y > np.median(y), 1.0, -1.0)
    if name == "rcv1like":
        X, y = make_sparse_text(n=20_000, d=100_000, nnz_per_row=80, seed=1)
    else:
        X, y = load(name)
        X = normalize_rows(sp.csr_matrix(X, dtype=np.float64))
    return X, y, y


def fmt(t):
    return "-" if t is None else (f"{t:.3f}" if t < 10 else f"{t:.1f}")


def summary(results):
    """The targets' table: fastdual's time over the fastest peer's, per case and target."""
    lines = ["| case | support | floor (s) | fastdual 1e-4 | fastest peer 1e-4 | ratio "
             "| fastdual 1e-6 | fastest peer 1e-6 | ratio |", "|---|---:|---:|---:|---|---:|---:|---|---:|"]
    for result in results:
        ours = dict((k, t) for k, t, _ in result["rows"])["fastdual cd"]
        cells = []
        for i in range(len(TARGETS)):
            peers = [(t[i], k) for k, t, _ in result["rows"]
                     if not k.startswith("fastdual") and t[i] is not None]
            best = min(peers) if peers else (None, "none")
            ratio = "-" if ours[i] is None or best[0] is None else f"{ours[i] / best[0]:.2f}"
            cells += [fmt(ours[i]), f"{fmt(best[0])} ({best[1]})", ratio]
        lines.append(f"| {result['case']} | {result['support']} | {result['floor']:.4f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["news20", "reuters_lasvm", "a9a", "rcv1like", "dense"])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--scales", nargs="+", type=float, default=[10.0, 100.0, 1000.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=20.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    import fastdual
    fastdual.train(np.eye(2), [1.0, -1.0])          # the package's imports, outside the timing
    peers = {}
    for problem in args.problems:
        good, bad = check_mappings(problem)
        peers[problem] = set(good)
        for name, why in bad:
            print(f"{problem}: {name} dropped (mapping check: {why})", flush=True)
    results = []
    print("| case | solver | 1e-4 (s) | 1e-6 (s) | best subopt |")
    print("|---|---|---:|---:|---:|")
    for name in args.datasets:
        X, y_regression, y_labels = dataset(name)
        for problem in args.problems:
            y = y_regression if PROBLEMS[problem][0] == "squared" else y_labels
            for scale in args.scales:
                result = run_case(name, X, y, problem, scale, args.repeats, args.max_seconds,
                                  peers[problem])
                results.append(result)
                for key, times, best in result["rows"]:
                    sub = "" if best is None else f"{max(best, 0.0):.1e}"
                    print(f"| {result['case']} | {key} | {fmt(times[0])} | {fmt(times[1])} "
                          f"| {sub} |", flush=True)
    print()
    print(summary(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
