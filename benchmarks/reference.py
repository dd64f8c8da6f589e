"""High-precision reference minimisers used to fix P* (the optimal value).

Independent of the solvers under comparison where possible:

* smooth problems without l1: scipy L-BFGS-B on P(w) (value and gradient from
  :mod:`benchmarks.objective`), started from a LIBLINEAR solution when one is at hand;
* elastic net: L-BFGS-B on the split form w = u - v, u, v >= 0 (smooth with bounds);
* hinge (non-smooth): LIBLINEAR's dual coordinate descent through scikit-learn's
  LinearSVC (which, unlike liblinear-official, accepts a large max_iter) with a
  tiny tolerance, and L-BFGS-B on the box-constrained dual, whose value is a
  certified lower bound on P*;
* ridge: additionally LSQR on the stacked least-squares form.

Each method reports its P; the benchmark takes P* as the smallest value reached by
any reference or any solver run (benchopt's convention).
"""
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import fmin_l_bfgs_b, minimize

from .objective import PROBLEMS, primal, smooth_value_and_grad, split_value_and_grad


def lbfgs(X, y, problem, alpha, w0=None, maxiter=20000):
    d = X.shape[1]
    w0 = np.zeros(d) if w0 is None else np.asarray(w0, dtype=np.float64)
    if problem.l1_ratio:
        uv0 = np.concatenate([np.maximum(w0, 0.0), np.maximum(-w0, 0.0)])
        uv, f, info = fmin_l_bfgs_b(split_value_and_grad, uv0, args=(X, y, problem, alpha),
                                    bounds=[(0.0, None)] * (2 * d), m=30, factr=10.0,
                                    pgtol=1e-15, maxiter=maxiter, maxfun=2 * maxiter)
        return uv[:d] - uv[d:]
    w, f, info = fmin_l_bfgs_b(smooth_value_and_grad, w0, args=(X, y, problem, alpha), m=30,
                               factr=10.0, pgtol=1e-15, maxiter=maxiter, maxfun=2 * maxiter)
    return w


def hinge_dual_lbfgs(X, y, alpha, maxiter=50000, max_seconds=60.0):
    """Box-constrained dual of the hinge problem, by L-BFGS-B.

    D(a) = (1/n) sum a_i - 1/(2 alpha n^2) ||X^T (a * y)||^2,  0 <= a_i <= 1,
    w(a) = X^T (a * y) / (alpha n).  Returns (w(a), D(a)); D(a) <= P* <= P(w(a)).
    """
    n = X.shape[0]
    lam_n = alpha * n

    def f(a):  # -n D(a), O(1) gradients
        v = np.asarray(X.T @ (a * y)).ravel()
        val = -a.sum() + 0.5 * np.dot(v, v) / lam_n
        grad = -1.0 + y * np.asarray(X @ v).ravel() / lam_n
        return val, grad

    t0 = time.perf_counter()

    def out_of_time(intermediate_result):
        if time.perf_counter() - t0 > max_seconds:
            raise StopIteration

    res = minimize(f, np.full(n, 0.5), jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0)] * n,
                   callback=out_of_time,
                   options=dict(maxcor=30, ftol=1e-15, gtol=1e-14, maxiter=maxiter,
                                maxfun=2 * maxiter))
    a = res.x
    w = np.asarray(X.T @ (a * y)).ravel() / lam_n
    return w, hinge_dual_value(X, y, alpha, a)


def hinge_dual_value(X, y, alpha, a):
    """D(a) of hinge_dual_lbfgs's dual, evaluated here (numpy), for a in [0, 1]^n."""
    n = X.shape[0]
    v = np.asarray(X.T @ (a * y)).ravel()
    return (a.sum() - 0.5 * np.dot(v, v) / (alpha * n)) / n


def fastdual_certified(X, y, alpha, tol=1e-10):
    """fastdual's SDCA run to a certified relative gap of tol: (w, D) with D the dual value
    of its duals (clipped to the box) evaluated by hinge_dual_value, not by fastdual, so that
    D <= P* <= P(w) holds whatever fastdual's certificate says. For the cases where LinearSVC
    and the L-BFGS-B dual stop short (reuters_lasvm at C = 10: 3.5e-4 above the optimum)."""
    import fastdual
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fastdual.train(X, y, loss="hinge", alpha=alpha, fit_intercept=False, tol=tol,
                               max_epochs=200000, solver="sdca", random_state=0)
    a = np.clip(np.asarray(model.dual_coef_, dtype=np.float64).ravel() * y, 0.0, 1.0)
    return np.asarray(model.coef_, dtype=np.float64).ravel(), hinge_dual_value(X, y, alpha, a)


def linearsvc(X, y, problem, alpha, max_iter=200000):
    from sklearn.svm import LinearSVC
    n = X.shape[0]
    clf = LinearSVC(loss=problem.loss, dual=True, C=1.0 / (alpha * n), fit_intercept=False,
                    tol=1e-12, max_iter=max_iter)
    if sp.issparse(X) and X.indices.dtype != np.int32:
        # (scikit-learn's liblinear wrapper refuses int64 indices, which load_svmlight_file
        # gives; the reference is not timed)
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                          shape=X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    return clf.coef_.ravel()


def liblinear_tight(X, y, problem, alpha, eps=1e-10):
    from .solvers import Liblinear
    for form in ("primal", "dual"):
        s = Liblinear(form)
        if s.supports(problem.name):
            ctx = s.prepare(X, y, problem.name, alpha)
            return s.fit(ctx, eps)
    return None


def ridge_lsqr(X, y, alpha):
    from scipy.sparse.linalg import lsqr
    n = X.shape[0]
    # P = 1/(2n) ||Xw - y||^2 + alpha/2 ||w||^2  <=>  ||Xw - y||^2 + (alpha n) ||w||^2
    res = lsqr(X, y, damp=np.sqrt(alpha * n), atol=1e-16, btol=1e-16, conlim=1e16,
               iter_lim=100000)
    return res[0]


def compute_reference(X, y, problem, alpha, verbose=True):
    """Return {"p_star": best P, "methods": {name: (P, seconds)}}."""
    if isinstance(problem, str):
        problem = PROBLEMS[problem]
    methods = {}

    def record(name, fn):
        t0 = time.perf_counter()
        w = fn()
        if w is None:
            return None
        methods[name] = (primal(w, X, y, problem, alpha), time.perf_counter() - t0)
        if verbose:
            print("    reference %-14s P = %.15g  (%.1f s)" % (name, methods[name][0],
                                                            methods[name][1]), flush=True)
        return w

    dual_bound = None
    if problem.loss == "hinge":
        box = {}

        def dual(method):
            w, D = method(X, y, alpha)
            box["D"] = max(box.get("D", -np.inf), D)
            return w

        record("linearsvc", lambda: linearsvc(X, y, problem, alpha))
        record("hinge_dual_lbfgs", lambda: dual(hinge_dual_lbfgs))
        if problem.l1_ratio == 0:
            record("fastdual_certified", lambda: dual(fastdual_certified))
        dual_bound = box["D"]
    else:
        w0 = None
        if problem.l1_ratio == 0:
            w0 = record("liblinear", lambda: liblinear_tight(X, y, problem, alpha))
        record("lbfgs", lambda: lbfgs(X, y, problem, alpha, w0=w0))
        if problem.loss == "squared":
            record("lsqr", lambda: ridge_lsqr(X if sp.issparse(X) else np.asarray(X), y, alpha))
    p_star = min(p for p, _ in methods.values())
    out = {"p_star": p_star, "methods": {k: {"primal": v[0], "seconds": v[1]}
                                         for k, v in methods.items()}}
    if dual_bound is not None:
        out["dual_bound"] = dual_bound
        out["certified_relative_gap"] = (p_star - dual_bound) / abs(p_star)
        if verbose:
            print("    reference dual bound     D = %.15g  (certified gap %.1e)"
                  % (dual_bound, out["certified_relative_gap"]), flush=True)
    return out
