"""The free intercept (regularize_intercept=False) trained by SDCA (proximal steps on the
intercept around the kernel, fastdual.solvers.sdca.FreeIntercept) and by AGM (the dual with bias,
or the primal), against the libraries that solve exactly that problem: scikit-learn's
SVC(kernel="linear") (libsvm: the SVM with an unregularized bias), LogisticRegression and Ridge
(unpenalised intercepts)."""
import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import np_loss


def shifted_problem(n=240, d=5, seed=0, sparse=False):
    """Data whose optimum needs a large intercept (features far from zero mean)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 1.5
    score = X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n)
    y = np.where(score > np.median(score) + 0.3, 1.0, -1.0)
    return (sp.csr_matrix(X) if sparse else X), y, score


def objective(X, y, coef, intercept, loss, alpha):
    """P(w, b) with b unpenalised, by NumPy: the mean loss at X w + b plus alpha/2 ||w||^2."""
    Xd = X.toarray() if sp.issparse(X) else X
    return float(np.mean(np_loss(loss, y, Xd @ coef + intercept)) + 0.5 * alpha * coef @ coef)


# (solver, its options, tol): SDCA's proximal steps on the intercept; AGM's SVM dual with bias
# (seed 004 eq. 41, projected onto box and hyperplane every iteration, form="auto"), with either
# memory; AGM's smoothed primal, the slower road with a free intercept (its Psi is not strongly
# convex in the intercept, docs/math.md Sec. 4h).
HINGE_SOLVERS = [("sdca", {}, 1e-10), ("agm", {}, 1e-8), ("agm", {"memory": "one"}, 1e-8),
                 ("agm", {"form": "primal"}, 1e-6),
                 ("agm", {"form": "primal", "memory": "one"}, 1e-6)]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver, options, tol", HINGE_SOLVERS)
def test_free_intercept_hinge_matches_svc(sparse, solver, options, tol):
    from sklearn.svm import SVC
    X, y, _ = shifted_problem(seed=1, sparse=sparse)
    alpha = 1e-2
    svc = SVC(kernel="linear", C=1.0 / (alpha * 240), tol=1e-10).fit(X, y)
    model = fastdual.train(X, y, loss="hinge", alpha=alpha, solver=solver,
                           regularize_intercept=False, tol=tol, max_epochs=1_000_000, **options)
    assert model.converged_ and model.intercept_mode == "free" and model.solver == solver
    coef = svc.coef_.toarray().ravel() if sp.issparse(svc.coef_) else svc.coef_.ravel()
    p_svc = objective(X, y, coef, svc.intercept_[0], "hinge", alpha)
    p_fd = objective(X, y, model.coef_, model.intercept_, "hinge", alpha)
    assert p_fd == pytest.approx(p_svc, rel=max(1e-6, 2 * tol))
    assert p_fd <= p_svc + model.gap_ + 1e-12
    assert model.intercept_ == pytest.approx(svc.intercept_[0], rel=1e-3)


@pytest.mark.parametrize("solver, tol", [("sdca", 1e-12), ("agm", 1e-10)])
def test_free_intercept_logistic_matches_logistic_regression(solver, tol):
    from sklearn.linear_model import LogisticRegression
    X, y, _ = shifted_problem(seed=2)
    alpha = 1e-3
    ref = LogisticRegression(C=1.0 / (alpha * 240), tol=1e-12, max_iter=100_000).fit(X, y)
    model = fastdual.train(X, y, loss="logistic", alpha=alpha, solver=solver,
                           regularize_intercept=False, tol=tol, max_epochs=1_000_000)
    assert model.converged_
    p_ref = objective(X, y, ref.coef_.ravel(), ref.intercept_[0], "logistic", alpha)
    assert objective(X, y, model.coef_, model.intercept_, "logistic", alpha) == pytest.approx(
        p_ref, rel=1e-9)
    assert model.intercept_ == pytest.approx(ref.intercept_[0], rel=1e-4)


@pytest.mark.parametrize("solver", ["sdca", "agm"])
def test_free_intercept_squared_matches_ridge_with_weights(solver):
    from sklearn.linear_model import Ridge
    X, _, score = shifted_problem(seed=3, sparse=True)
    target = score + 4.0
    weights = np.random.default_rng(4).uniform(0.5, 2.0, 240)
    alpha = 1e-2
    # Ridge minimises sum_i s_i (x_i.w + b - y_i)^2 + a ||w||^2; fastdual's weights are
    # normalised to mean 1: (1/n) sum_i c_i (z - y)^2 / 2 + alpha/2 ||w||^2, c = s / mean(s).
    ridge = Ridge(alpha=alpha * weights.sum(), tol=1e-12, solver="cholesky").fit(
        X.toarray(), target, sample_weight=weights)
    model = fastdual.train(X, target, loss="squared", alpha=alpha, sample_weight=weights,
                           solver=solver, regularize_intercept=False, tol=1e-12,
                           max_epochs=1_000_000)
    np.testing.assert_allclose(model.coef_, ridge.coef_, rtol=1e-5, atol=1e-7)
    assert model.intercept_ == pytest.approx(ridge.intercept_, rel=1e-6)


def test_sdca_free_intercept_certificate_and_warm_start():
    """The certificate is duality_gap's for the returned model; a warm start from a converged
    model (its duals, projected onto sum c a = 0, and its intercept as the first centre) stays
    converged."""
    X, y, _ = shifted_problem(seed=5)
    # A fixed sampling order: over random orders about 1 in 80 warm starts needs 4 to 7 epochs.
    kwargs = dict(loss="smooth_hinge", alpha=1e-2, solver="sdca", regularize_intercept=False,
                  random_state=0)
    model = fastdual.train(X, y, tol=1e-9, max_epochs=20_000, **kwargs)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="smooth_hinge",
                                alpha=1e-2, regularize_intercept=False,
                                dual_coef=model.dual_coef_)
    assert (cert.primal, cert.dual) == (model.primal_, model.dual_)
    again = fastdual.train(X, y, tol=1e-8, max_epochs=20_000, warm_start=model, **kwargs)
    assert again.converged_ and again.n_epochs_ <= 3

