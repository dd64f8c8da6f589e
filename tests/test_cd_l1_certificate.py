"""Pure-l1 cd on weakly regularised data with collinear columns (one-hot groups and the
regularised intercept, as in a9a): the proximal Newton model minimised on its Gram matrix
(docs/math.md 4k) reaches the certificate's tol, the certificate is the shared one, and the
optimum agrees with independent references (scipy's L-BFGS-B, scikit-learn's liblinear)."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

import fastdual
from fastdual.solvers import _cd
from fastdual.solvers import cd as cd_module

C = 30.0      # weak regularisation: l1 = 1 / (C n)
TOL = 1e-4


def one_hot_problem(n=2000, groups=6, categories=5, seed=0):
    """Categorical data one-hot encoded: every group's columns sum to the intercept's column,
    so X with the intercept has a null space of dimension `groups`."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, categories, size=(n, groups))
    rows = np.repeat(np.arange(n), groups)
    cols = (codes + categories * np.arange(groups)).ravel()
    X = sp.csr_matrix((np.ones(n * groups), (rows, cols)), shape=(n, groups * categories))
    beta = rng.normal(size=groups * categories)
    y = np.where(X @ beta + rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def reference_optimum(X, y, loss, C):
    """P* of the averaged objective (1/n) sum_i phi(y_i, x_i . w + b) + ||(w, b)||_1 / (C n) by
    L-BFGS-B on w = p - q, p, q >= 0 (the intercept regularised, LIBLINEAR's -B 1)."""
    n, d = X.shape
    A = (sp.diags(y) @ sp.hstack([X, np.ones((n, 1))])).tocsr()
    l1 = 1.0 / (C * n)

    def objective(pq):
        z = A @ (pq[:d + 1] - pq[d + 1:])
        if loss == "squared_hinge":
            slack = np.maximum(0.0, 1.0 - z)
            value, derivative = np.mean(slack * slack), -2.0 * slack / n
        else:
            value, derivative = np.mean(np.logaddexp(0.0, -z)), -np.exp(-np.logaddexp(0.0, z)) / n
        g = A.T @ derivative
        return value + l1 * pq.sum(), np.concatenate([g + l1, l1 - g])

    result = minimize(objective, np.zeros(2 * (d + 1)), jac=True, method="L-BFGS-B",
                      bounds=[(0.0, None)] * (2 * (d + 1)),
                      options=dict(maxiter=20000, maxfun=40000, ftol=0.0, gtol=0.0,
                                   maxcor=30))
    return float(result.fun)


@pytest.fixture(scope="module")
def data():
    return one_hot_problem()


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_reaches_tol_and_optimum(data, loss):
    X, y = data
    model = fastdual.train(X, y, loss=loss, C=C, l1_ratio=1.0, solver="cd", tol=TOL,
                           max_epochs=1000)
    assert model.solver == "cd"
    assert model.converged_ and model.relative_gap_ <= TOL
    # the certificate is the shared one, recomputed for exactly the returned coef and duals
    again = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss=loss, C=C,
                                 l1_ratio=1.0, dual_coef=model.dual_coef_)
    assert again.primal == pytest.approx(model.primal_, rel=1e-13)
    assert again.dual == pytest.approx(model.dual_, rel=1e-13)
    assert again.gap == pytest.approx(model.gap_, rel=1e-9, abs=1e-15)
    # an independent P*: inside [dual_, primal_], up to the reference's own accuracy
    p_star = reference_optimum(X, y, loss, C)
    slack = 1e-10 * abs(p_star)
    assert model.dual_ <= p_star + slack
    assert model.primal_ - p_star <= model.gap_ + slack


def test_dual_is_a_lower_bound_for_liblinear(data):
    """scikit-learn's liblinear (the same objective, intercept regularised): its primal can
    never lie below fastdual's certified dual, and fastdual's primal is within its gap of it."""
    sklearn = pytest.importorskip("sklearn.linear_model")
    X, y = data
    n = X.shape[0]
    model = fastdual.train(X, y, loss="logistic", C=C, l1_ratio=1.0, solver="cd", tol=1e-6,
                           max_epochs=2000)
    assert model.converged_
    # (a fixed seed: liblinear's l1 solver shuffles its coordinates)
    ref = sklearn.LogisticRegression(l1_ratio=1.0, solver="liblinear", C=C, tol=1e-8,
                                     max_iter=10000, intercept_scaling=1.0,
                                     random_state=0).fit(X, y)
    w = np.append(ref.coef_.ravel(), ref.intercept_[0])
    z = y * (X @ ref.coef_.ravel() + ref.intercept_[0])
    ref_primal = np.mean(np.logaddexp(0.0, -z)) + np.abs(w).sum() / (C * n)
    assert model.dual_ <= ref_primal * (1 + 1e-12)
    assert model.primal_ <= ref_primal + model.gap_ + 1e-12


def test_column_sweeps_lag_on_this_problem(data, monkeypatch):
    """The same problem with the model minimised by column sweeps only (the Gram matrix
    disabled) stalls: the case the Gram matrix is for (were this to converge, the tests above
    would no longer test the Gram path's reason to be)."""
    X, y = data
    monkeypatch.setattr(cd_module, "GRAM_SIZE", 0)
    with pytest.warns(fastdual.ConvergenceWarning):
        model = fastdual.train(X, y, loss="squared_hinge", C=C, l1_ratio=1.0, solver="cd",
                               tol=TOL, max_epochs=300)
    assert model.relative_gap_ > 100 * TOL


@pytest.mark.parametrize("layout", ["dense", "float32"])
def test_layouts_agree(data, layout):
    X, y = data
    X = X.toarray() if layout == "dense" else X.astype(np.float32)
    model = fastdual.train(X, y, loss="logistic", C=C, l1_ratio=1.0, solver="cd", tol=TOL,
                           max_epochs=1000)
    assert model.converged_
    p_star = reference_optimum(*data, "logistic", C)
    assert model.dual_ <= p_star * (1 + 1e-10)
    assert model.primal_ - p_star <= model.gap_ + 1e-10 * p_star


@pytest.mark.parametrize("dense", [False, True])
def test_model_gram_matches_scipy(dense):
    """The Gram kernel against scipy: X_W^T diag(h) X_W and X_W^T g, the intercept's column
    (value bias) in W, rows with unsorted indices."""
    rng = np.random.default_rng(1)
    n, d, bias = 40, 9, 1.7
    X = sp.random(n, d, density=0.4, random_state=2, format="csr")
    X.data[:] = rng.normal(size=X.data.shape[0])
    if not dense:
        # unsorted indices within the rows
        for i in range(n):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            X.indices[lo:hi] = X.indices[lo:hi][::-1].copy()
            X.data[lo:hi] = X.data[lo:hi][::-1].copy()
        X.has_sorted_indices = False
    h, g = rng.uniform(0.0, 2.0, n), rng.normal(size=n)
    h[::5] = 0.0
    ws = np.array([0, 2, 3, 7, d], dtype=np.int32)
    position = np.full(d + 1, -1, dtype=np.int32)
    position[ws] = np.arange(ws.shape[0], dtype=np.int32)
    m = ws.shape[0]
    gram, b = np.empty((m, m)), np.empty(m)
    if dense:
        args = (np.ascontiguousarray(X.toarray()).ravel(), np.empty(0, np.int32),
                np.empty(0, np.int32))
    else:
        args = (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32))
    _cd.model_gram(*args, n, d, bias, g, h, position, gram, b,
                   np.empty(m, dtype=np.int32), np.empty(m))
    full = np.hstack([X.toarray(), np.full((n, 1), bias)])[:, ws]
    np.testing.assert_allclose(gram, full.T @ (h[:, None] * full), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b, full.T @ g, rtol=1e-12, atol=1e-12)
