"""The duality-gap certificate: weak duality for random feasible points, the gap at convergence,
monotone dual ascent, and the incremental v equal to v recomputed from alpha."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastdual
from conftest import (BINARY_LOSSES, REGRESSION_LOSSES, SMOOTH_LOSSES, np_objective,
                      problem_for)
from fastdual.losses import make_loss

ALL = BINARY_LOSSES + REGRESSION_LOSSES


def random_feasible_dual(loss_name, y, rng):
    """A random point in the domain of phi*: the dual built from random margins, mixed with 0."""
    loss = make_loss(loss_name, {})[1]
    margins = 3 * rng.standard_normal(y.shape[0])
    return rng.random(y.shape[0]) * loss.duals_from_margins(y, margins)


@given(loss=st.sampled_from(ALL), seed=st.integers(0, 10_000), l1_ratio=st.sampled_from([0.0, 0.3, 1.0]),
       log_alpha=st.floats(-4, 0), sparse=st.booleans(), with_intercept=st.booleans())
def test_weak_duality_for_random_points(loss, seed, l1_ratio, log_alpha, sparse, with_intercept):
    rng = np.random.default_rng(seed)
    X, y = problem_for(loss, n=30, d=5, seed=seed, sparse=sparse)
    coef = rng.standard_normal(5)
    intercept = float(rng.standard_normal()) if with_intercept else None
    dual = random_feasible_dual(loss, np.where(y > 0, 1.0, -1.0) if loss in BINARY_LOSSES else y, rng)
    alpha = 10.0 ** log_alpha
    for dual_coef in (dual, None):
        cert = fastdual.duality_gap(X, y, coef, intercept, loss=loss, alpha=alpha,
                                    l1_ratio=l1_ratio, dual_coef=dual_coef)
        assert np.isfinite(cert.dual)         # D = -inf would pass P >= D vacuously
        assert cert.primal >= cert.dual - 1e-12 * max(1.0, abs(cert.primal))
        expected = np_objective(X, y, coef, intercept or 0.0, loss=loss, l2=alpha * (1 - l1_ratio),
                                l1=alpha * l1_ratio, fit_intercept=with_intercept)
        assert cert.primal == pytest.approx(expected, rel=1e-10)


@given(loss=st.sampled_from(ALL), seed=st.integers(0, 10_000),
       l1_ratio=st.sampled_from([0.0, 0.5]), sparse=st.booleans())
def test_sdca_dual_never_decreases_and_the_final_gap_is_within_tol(loss, seed, l1_ratio, sparse):
    X, y = problem_for(loss, n=40, d=5, seed=seed, sparse=sparse)
    model = fastdual.train(X, y, solver="sdca", loss=loss, alpha=0.05, l1_ratio=l1_ratio, tol=0.0, max_epochs=12,
                           random_state=seed, check_every=1)
    duals = np.array([h["dual"] for h in model.history_])
    scale = max(1.0, abs(duals[-1]))
    assert np.all(np.diff(duals) >= -1e-12 * scale)
    gaps = np.array([h["gap"] for h in model.history_])
    assert np.all(gaps >= -1e-12 * scale)
    model = fastdual.train(X, y, solver="sdca", loss=loss, alpha=0.05, l1_ratio=l1_ratio, tol=1e-3,
                           max_epochs=20_000, random_state=seed)
    assert model.converged_
    assert 0 <= model.gap_ <= 1e-3 * abs(model.primal_) + 1e-15
    # The reported primal is the objective of the returned model, computed independently.
    assert model.primal_ == pytest.approx(
        np_objective(X, y, model.coef_, model.intercept_, loss=loss, l2=0.05 * (1 - l1_ratio),
                     l1=0.05 * l1_ratio, fit_intercept=True),
        rel=1e-9)


@pytest.mark.parametrize("l1_ratio", [0.0, 0.4])
@pytest.mark.parametrize("sparse", [False, True])
def test_incremental_v_equals_v_recomputed_from_alpha(l1_ratio, sparse):
    X, y = problem_for("logistic", n=60, d=7, seed=3, sparse=sparse)
    alpha = 0.02
    model = fastdual.train(X, y, loss="logistic", alpha=alpha, l1_ratio=l1_ratio, tol=0.0,
                           max_epochs=25, random_state=1, fit_intercept=False)
    l2, l1 = alpha * (1 - l1_ratio), alpha * l1_ratio
    Xd = X.toarray() if sp.issparse(X) else X
    v = Xd.T @ model.dual_coef_ / (l2 * Xd.shape[0])
    expected = np.sign(v) * np.maximum(np.abs(v) - l1 / l2, 0.0)
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-10, atol=1e-12)


def w_of_duals_exactly(X, duals, l2, l1):
    """soft_threshold(X~^T duals / (l2 n), l1 / l2) (X~: X with a column of ones), in exact
    rational arithmetic, rounded once to float64."""
    from fractions import Fraction
    n = X.shape[0]
    columns = [[Fraction(float(x)) for x in X[:, j]] for j in range(X.shape[1])]
    columns.append([Fraction(1)] * n)
    a = [Fraction(float(t)) for t in duals]
    scale, kappa = Fraction(l2) * n, Fraction(l1) / Fraction(l2)
    v = [sum(x * t for x, t in zip(column, a)) / scale for column in columns]
    return np.array([float(max(abs(e) - kappa, 0) * (1 if e > 0 else -1)) for e in v])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_certificate_sums_v_without_rounding_loss_when_asked(dtype, sparse):
    """v(duals) written to v_out with exact_v is exact but for the last roundings (a few eps
    per entry) where its terms cancel a million-fold; the certificate is the same bits either
    way."""
    from fastdual._problem import build_problem
    rng = np.random.default_rng(4)
    X = (rng.standard_normal((400, 6)) + 30.0).astype(dtype)
    X[rng.random(X.shape) < 0.2] = 0.0
    weights = rng.uniform(0.5, 2.0, 400)
    problem = build_problem(sp.csr_matrix(X) if sparse else X, rng.standard_normal(400),
                            loss="squared", alpha=1e-3, C=None, l1_ratio=0.0, fit_intercept=True,
                            intercept_scaling=1.7, sample_weight=weights, loss_params={})
    # Duals whose weighted sums against the columns nearly vanish.
    columns = np.hstack([X.astype(float), np.full((400, 1), 1.7)]) * problem.sample_weight[:, None]
    duals = rng.standard_normal(400)
    duals -= columns @ np.linalg.lstsq(columns, duals, rcond=None)[0]
    duals += 1e-5 * rng.standard_normal(400)
    w = rng.standard_normal(7)
    plain = problem.certificate(w, duals)
    v = np.empty(7)
    assert problem.certificate(w, duals, v_out=v, exact_v=True) == plain
    from fractions import Fraction
    c = [Fraction(float(t)) for t in problem.sample_weight]
    a = [Fraction(float(t)) for t in duals]
    columns = [[Fraction(float(x)) for x in X[:, j]] for j in range(6)]
    columns.append([Fraction(1.7)] * 400)
    scale = Fraction(1e-3) * 400
    exact = [sum(ci * ai * x for ci, ai, x in zip(c, a, column)) / scale for column in columns]
    magnitude = [sum(abs(ci * ai * x) for ci, ai, x in zip(c, a, column)) / scale
                 for column in columns]
    assert min(float(m / abs(e)) for m, e in zip(magnitude, exact)) > 1e5   # they cancel
    eps = np.finfo(float).eps
    for got, e in zip(v, exact):
        assert abs(Fraction(float(got)) - e) <= 5 * eps * abs(e)


@pytest.mark.parametrize("fma", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("intercept", ["none", "regularized", "free"])
@pytest.mark.parametrize("loss, l1_ratio", [("squared", 0.0), ("logistic", 0.4),
                                            ("smooth_hinge", 0.0), ("hinge", 0.7)])
def test_the_packed_pass_over_sparse_rows_gives_the_three_vectors_bits(fma, dtype, intercept,
                                                                      loss, l1_ratio):
    """Sparse rows with v summed exactly go through w, v and its rounding packed side by side
    (_core/gap.pyx, primal_dual); P, D, the gap and v_out are the bits of the pass over three
    vectors (with the products' roundings by a fused multiply-add or by Dekker's split alike),
    on stored zeros, empty rows and samples of weight 0; and P, D and the gap are those of
    block_sums and combine, whose sums over the features are _penalty_terms' and
    _penalty_gap's (the one sweep of _finish against them)."""
    from fastdual._core import gap as _gap
    from fastdual._problem import build_problem
    rng = np.random.default_rng(7)
    X = sp.random(120, 300, density=0.03, random_state=8, format="lil", dtype=dtype)
    X[[4, 50, 119], :] = 0.0                           # empty rows
    X = sp.csr_matrix(X)
    X.data[::7] = 0.0                                  # stored zeros
    X.data *= rng.lognormal(0.0, 2.0, X.data.shape[0]).astype(dtype)
    assert np.diff(X.indptr)[[4, 50, 119]].tolist() == [0, 0, 0]
    y = np.where(rng.random(120) < 0.5, 1.0, -1.0) if loss != "squared" else rng.standard_normal(120)
    weights = rng.uniform(0.2, 3.0, 120)
    weights[::11] = 0.0
    problem = build_problem(X, y, loss=loss, alpha=1e-2, C=None, l1_ratio=l1_ratio,
                            fit_intercept=intercept != "none", intercept_scaling=1.3,
                            sample_weight=weights, loss_params={},
                            regularize_intercept=intercept != "free")
    duals = problem.feasible_duals(random_feasible_dual(loss, problem.y, rng))
    w = rng.standard_normal(301)
    results = []
    previous, previous_fma = _gap._set_packed(True), _gap._set_exact_fma(True)
    try:
        _gap._set_exact_fma(fma)
        for packed in (True, False):
            _gap._set_packed(packed)
            v = np.full(301, np.nan)
            results.append((problem.certificate(w, duals, v_out=v, feasible=True, exact_v=True),
                            v))
    finally:
        _gap._set_packed(previous)
        _gap._set_exact_fma(previous_fma)
    (packed_sums, packed_v), (plain_sums, plain_v) = results
    assert np.all(np.isfinite(packed_v))
    assert packed_sums == plain_sums
    assert np.array_equal(packed_v, plain_v)
    if intercept == "free":
        assert packed_v[300] == 0.0
    v_plain = np.empty(301)
    plain = problem.certificate(w, duals, v_out=v_plain, feasible=True)
    assert plain == packed_sums
    sums = _gap.block_sums(*problem.X.kernel_args, 120, 300, problem.bias, problem.y,
                           problem.sample_weight, w, duals, problem.l2, 120, problem.loss,
                           np.zeros(301), intercept == "free")
    assert _gap.combine(w, v_plain, *sums, 120, problem.l2, problem.l1,
                        intercept == "free") == plain


@pytest.mark.parametrize("sparse", [False, True])
def test_the_certificate_of_rows_without_entries(sparse):
    """No stored entry at all (the packed pass with no column indices; X of no feature is
    refused upstream): the certificate of the intercept alone, the same with v exact or not."""
    from fastdual._problem import build_problem
    y = np.array([1.0, -1.0, 1.0, 1.0])
    X = sp.csr_matrix(np.zeros((4, 3))) if sparse else np.zeros((4, 3))
    problem = build_problem(X, y, loss="logistic", alpha=0.1, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    d = X.shape[1]
    w = np.r_[np.zeros(d), 0.3]
    duals = np.array([0.2, -0.4, 0.5, 0.1])
    v, v_exact = np.empty(d + 1), np.empty(d + 1)
    plain = problem.certificate(w, duals, v_out=v)
    assert problem.certificate(w, duals, v_out=v_exact, exact_v=True) == plain
    expected_v = np.r_[np.zeros(d), duals.sum() / (0.1 * 4)]
    np.testing.assert_allclose(v, expected_v, rtol=1e-15)
    np.testing.assert_allclose(v_exact, expected_v, rtol=1e-15)
    margins = np.full(4, 0.3)
    primal = np.mean(np.logaddexp(0.0, -y * margins)) + 0.05 * 0.09
    assert plain[0] == pytest.approx(primal, rel=1e-14)


def test_the_certificate_refuses_vectors_of_the_wrong_length():
    from fastdual._core import gap as _gap
    from fastdual._problem import build_problem
    X, y = problem_for("logistic", n=10, d=4, seed=1, sparse=True)
    problem = build_problem(X, y, loss="logistic", alpha=0.1, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    args = (*problem.X.kernel_args, 10, 4, problem.bias, problem.y, problem.sample_weight)
    for w, v, duals in ((np.zeros(5), np.zeros(6), np.zeros(10)),
                        (np.zeros(4), np.zeros(5), np.zeros(10)),
                        (np.zeros(5), np.zeros(5), np.zeros(9))):
        for exact in (False, True):
            with pytest.raises(ValueError, match="n_features \\+ 1|n_samples"):
                _gap.primal_dual(*args, w, duals, 0.1, 0.0, problem.loss, v, False, exact)


@pytest.mark.parametrize("loss, shift, alpha, l1_ratio", [("logistic", 0.0, 1e-4, 0.0),
                                                          ("logistic", 0.0, 1e-4, 0.3),
                                                          ("smooth_hinge", 10.0, 1e-6, 0.0)])
def test_a_long_sdca_run_returns_w_of_its_duals(monkeypatch, loss, shift, alpha, l1_ratio):
    """5000 epochs on float32 data: SDCA's v, updated step by step, takes over at the checks
    the certificate's v(duals) (summed with no rounding lost), so the returned coef_ and
    intercept_ are w(dual_coef_) to 1e-14 of max |w|; kept incrementally only, they carry the
    rounding of millions of updates."""
    from fastdual.solvers import sdca
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((500, 10)) + shift).astype(np.float32)
    scores = X.astype(float) @ rng.standard_normal(10)
    y = np.where(scores + 2 * scores.std() * rng.standard_normal(500) > np.median(scores),
                 1.0, -1.0)
    l2, l1 = alpha * (1 - l1_ratio), alpha * l1_ratio

    def error(model):
        w = w_of_duals_exactly(X, model.dual_coef_, l2, l1)
        return np.max(np.abs(np.append(model.coef_, model.intercept_) - w)) / np.max(np.abs(w))

    kwargs = dict(loss=loss, solver="sdca", alpha=alpha, l1_ratio=l1_ratio, tol=0.0,
                  max_epochs=5000, check_every=10, random_state=0)
    model = fastdual.train(X, y, **kwargs)
    assert error(model) <= 1e-14
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss=loss, alpha=alpha,
                                l1_ratio=l1_ratio, dual_coef=model.dual_coef_)
    assert (cert.primal, cert.dual, cert.gap) == (model.primal_, model.dual_, model.gap_)
    # The same run with v kept incrementally only: the drift the take-over removes.
    monkeypatch.setattr(sdca.SDCA, "dual_vector_out", lambda self: None)
    assert error(fastdual.train(X, y, **kwargs)) > 2e-14


def test_gap_bounds_the_suboptimality():
    """P(w_t) - P* <= gap_t for every check, with P* from a long run."""
    X, y = problem_for("smooth_hinge", n=100, d=8, seed=5)
    best = fastdual.train(X, y, alpha=1e-2, tol=1e-12, max_epochs=5000, random_state=0)
    run = fastdual.train(X, y, alpha=1e-2, tol=0.0, max_epochs=15, random_state=1, check_every=1)
    for entry in run.history_:
        assert entry["primal"] - best.dual_ <= entry["gap"] + 1e-12


def test_duality_gap_certifies_a_model_of_another_library():
    from sklearn.linear_model import LogisticRegression
    X, y = problem_for("logistic", n=120, d=6, seed=2)
    C = 0.7
    clf = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
    cert = fastdual.duality_gap(X, y, clf.coef_.ravel(), loss="logistic", C=C)
    assert 0 <= cert.gap <= 1e-8 * abs(cert.primal)
    worse = fastdual.duality_gap(X, y, 0.5 * clf.coef_.ravel(), loss="logistic", C=C)
    assert worse.gap > 1e3 * cert.gap


def test_pure_l1_certificate_is_for_the_l1_problem():
    from sklearn.linear_model import Lasso
    X, y = problem_for("squared", n=100, d=10, seed=4)
    alpha = 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, loss="squared", alpha=alpha, l1_ratio=1.0, tol=1e-3,
                               fit_intercept=False, random_state=0, max_epochs=3000,
                               solver="sdca")
    assert model.l2_added_ > 0 and model.l2_ == 0.0 and model.l1_ == alpha
    ref = Lasso(alpha=alpha, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(X, y)
    p_star = np_objective(X, y, ref.coef_, loss="squared", l2=0.0, l1=alpha)
    p_model = np_objective(X, y, model.coef_, loss="squared", l2=0.0, l1=alpha)
    assert p_model == pytest.approx(model.primal_, rel=1e-10)
    assert p_star - 1e-12 <= p_model <= p_star + model.gap_ + 1e-12
    assert model.relative_gap_ <= 1e-2


def standardized_breast_cancer():
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_an_optimal_linear_svc_is_certified_by_refined_duals(C):
    """Duals from the margins of an optimal hinge model are poor (the support vectors on the
    margin get 0 or 1); the default refinement raises the dual bound to near the primal."""
    from sklearn.svm import LinearSVC
    X, y = standardized_breast_cancer()
    clf = LinearSVC(loss="hinge", C=C, tol=1e-8, max_iter=1_000_000, dual=True,
                    random_state=0).fit(X, y)
    coef, intercept = clf.coef_.ravel(), float(clf.intercept_[0])
    margins_only = fastdual.duality_gap(X, y, coef, intercept, loss="hinge", C=C, refine_epochs=0)
    cert = fastdual.duality_gap(X, y, coef, intercept, loss="hinge", C=C)
    assert margins_only.relative_gap > 0.05                     # why refinement exists
    assert cert.gap <= 0.01 * margins_only.gap
    assert cert.primal == margins_only.primal                   # the primal side is the model's
    assert 0 <= cert.relative_gap <= 1e-3
    # A lower bound can never pass an optimum certified independently of it.
    optimum = fastdual.train(X, y, loss="hinge", C=C, tol=1e-10, max_epochs=100_000,
                             random_state=0)
    assert cert.dual <= optimum.primal_ + 1e-12 * abs(optimum.primal_)


@pytest.mark.parametrize("loss, solver_type", [("hinge", 3), ("squared_hinge", 1),
                                               ("logistic", 7)])
def test_the_gap_of_liblinears_model_is_at_least_its_suboptimality(loss, solver_type):
    """LIBLINEAR's model (-B 1: the same regularised intercept) is certified with a gap no
    smaller than P(w_liblinear) - P(w_fastdual), a lower bound on its suboptimality computed
    against fastdual's certified optimum, and the dual bound stays below every primal value."""
    ll = pytest.importorskip("liblinear.liblinearutil")   # liblinear-official
    X, y = standardized_breast_cancer()
    C = 1.0
    labels = np.where(y == 1, 1.0, -1.0)
    lib = ll.train(labels, X, f"-s {solver_type} -c {C} -B 1 -e 1e-6 -q")
    w = np.array(lib.get_decfun()[0])
    coef, intercept = w, float(lib.get_decfun()[1])
    if lib.get_labels()[0] != 1:          # LIBLINEAR's first label is its positive class
        coef, intercept = -coef, -intercept
    cert = fastdual.duality_gap(X, y, coef, intercept, loss=loss, C=C)
    optimum = fastdual.train(X, y, loss=loss, C=C, tol=1e-12, max_epochs=100_000, random_state=0)
    assert optimum.relative_gap_ <= 1e-10
    lower_bound = cert.primal - optimum.primal_
    assert cert.gap >= lower_bound - 1e-13 * abs(cert.primal)
    assert cert.dual <= optimum.primal_ + 1e-13 * abs(optimum.primal_)
    assert cert.primal >= optimum.dual_ - 1e-13 * abs(optimum.primal_)
    # Tight too. (Not a fixed bound: LIBLINEAR's model itself is at times 1e-2 from the
    # optimum, as its solvers shuffle with C's rand(), whose state earlier calls move.)
    assert cert.gap <= 10 * lower_bound + 1e-6 * abs(cert.primal)


def test_the_convergence_warning_on_unscaled_data_says_what_helps():
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.warns(fastdual.ConvergenceWarning) as record:
        fastdual.train(X, y, loss="logistic", max_epochs=20, random_state=0, solver="sdca")
    message = str(record[0].message)
    norms = np.linalg.norm(np.column_stack([X, np.ones(len(X))]), axis=1)
    assert f"range from {norms.min():.3g} to {norms.max():.3g}" in message
    assert "standardizing the features" in message
    Xs, _ = standardized_breast_cancer()
    with pytest.warns(fastdual.ConvergenceWarning) as record:
        fastdual.train(Xs, y, loss="logistic", alpha=1e-7, tol=1e-12, max_epochs=2,
                       random_state=0)
    assert "standardizing" not in str(record[0].message)


@settings(max_examples=20)
@given(loss=st.sampled_from(ALL), seed=st.integers(0, 10_000),
       l1_ratio=st.sampled_from([0.0, 0.3]), sparse=st.booleans())
def test_free_intercept_weak_duality_for_random_dual_points(loss, seed, l1_ratio, sparse):
    """With regularize_intercept=False any dual point, on the hyperplane sum_i c_i a_i = 0 or
    not, is projected onto it (and the box) before D is evaluated: D never exceeds P at any
    (w, b), in particular at a near-optimal model (within 1e-6 of P*, certified)."""
    rng = np.random.default_rng(seed)
    X, y = problem_for(loss, n=30, d=4, seed=seed, sparse=sparse)
    weights = rng.uniform(0.2, 3.0, 30)
    objective = dict(loss=loss, alpha=0.05, l1_ratio=l1_ratio, sample_weight=weights,
                     regularize_intercept=False)
    solver = "sdca" if l1_ratio == 0.0 else "agm"
    optimum = fastdual.train(X, y, solver=solver, tol=1e-6, max_epochs=100_000, **objective)
    assert optimum.converged_
    p_star = optimum.primal_        # within 1e-6 of the optimum
    signs = np.where(y > 0, 1.0, -1.0) if loss in BINARY_LOSSES else y
    dual = 3.0 * random_feasible_dual(loss, signs, rng)
    coef, intercept = rng.standard_normal(4), float(rng.standard_normal())
    cert = fastdual.duality_gap(X, y, coef, intercept, dual_coef=dual, **objective)
    assert cert.dual <= p_star + 1e-12 * max(1.0, abs(p_star))
    assert cert.dual <= cert.primal + 1e-12 * max(1.0, abs(cert.primal))


@given(loss=st.sampled_from(ALL), seed=st.integers(0, 10_000),
       l1_ratio=st.sampled_from([0.0, 0.3, 1.0]), sparse=st.booleans(),
       intercept=st.sampled_from(["none", "regularized", "free"]))
def test_the_gap_is_nonnegative_and_equals_primal_minus_dual(loss, seed, l1_ratio, sparse,
                                                             intercept):
    """The certificate's gap, a sum of Fenchel-Young terms, is >= 0 for any feasible duals and
    agrees with P - D to rounding (docs/math.md Sec. 2)."""
    rng = np.random.default_rng(seed)
    X, y = problem_for(loss, n=30, d=5, seed=seed, sparse=sparse)
    coef = rng.standard_normal(5)
    b = None if intercept == "none" else float(rng.standard_normal())
    dual = random_feasible_dual(loss, np.where(y > 0, 1.0, -1.0) if loss in BINARY_LOSSES else y,
                                rng)
    for dual_coef in (dual, None):
        cert = fastdual.duality_gap(X, y, coef, b, loss=loss, alpha=0.1, l1_ratio=l1_ratio,
                                    dual_coef=dual_coef, refine_epochs=0,
                                    regularize_intercept=intercept != "free")
        assert cert.gap >= 0.0
        assert np.isfinite(cert.dual)
        scale = max(1.0, abs(cert.primal), abs(cert.dual))
        assert cert.gap == pytest.approx(cert.primal - cert.dual, rel=0, abs=1e-13 * scale)
        assert cert.relative_gap == cert.gap / max(abs(cert.primal), np.finfo(float).tiny)


def test_the_gap_of_an_infeasible_dual_point_is_infinite():
    X, y = problem_for("hinge", n=30, d=5, seed=1)
    cert = fastdual.duality_gap(X, y, np.zeros(5), loss="hinge", alpha=0.1,
                                dual_coef=np.full(30, 2.0))
    assert cert.dual == -np.inf and cert.gap == np.inf


@pytest.mark.parametrize("solver, loss, l1_ratio", [
    ("sdca", "hinge", 0.0), ("sdca", "logistic", 0.5), ("sdca", "squared", 1.0),
    ("spdc", "smooth_hinge", 0.0), ("rda", "logistic", 0.3), ("newton", "squared_hinge", 0.0),
    ("agm", "hinge", 0.0)])
def test_trained_models_report_the_accumulated_gap(solver, loss, l1_ratio):
    X, y = problem_for(loss, n=80, d=6, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        model = fastdual.train(X, y, solver=solver, loss=loss, alpha=0.01, l1_ratio=l1_ratio,
                               tol=1e-9, max_epochs=300, random_state=0, check_every=5)
    for entry in model.history_:
        assert entry["gap"] >= 0.0
        assert entry["gap"] == pytest.approx(entry["primal"] - entry["dual"], rel=0,
                                             abs=1e-13 * max(1.0, abs(entry["primal"])))
    assert model.gap_ == model.history_[-1]["gap"]
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss=loss, alpha=0.01,
                                l1_ratio=l1_ratio, dual_coef=model.dual_coef_)
    assert (cert.primal, cert.dual, cert.gap) == (model.primal_, model.dual_, model.gap_)


def test_the_gap_keeps_its_digits_where_primal_minus_dual_loses_them():
    """n = 200000 rows, P ~ 1e6 and a gap ~ 5e-7 P: the rounding of the two O(n) sums is about
    1e-8 of the gap; the accumulated gap matches an extended-precision P - D far closer."""
    rng = np.random.default_rng(0)
    n, d, l2 = 200_000, 4, 1e-2
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + 1400.0 * rng.standard_normal(n)
    w = np.linalg.solve(X.T @ X / n + l2 * np.eye(d), X.T @ y / n)     # the ridge optimum
    duals = y - X @ w + rng.standard_normal(n)                          # its duals, perturbed
    cert = fastdual.duality_gap(X, y, w, loss="squared", alpha=l2, dual_coef=duals)
    # P - D in extended precision, from the definitions (no Fenchel-Young form).
    L = np.longdouble
    Xl, yl, wl, al = X.astype(L), y.astype(L), w.astype(L), duals.astype(L)
    v = Xl.T @ al / (L(l2) * n)
    primal = np.sum((Xl @ wl - yl) ** 2) / (2 * n) + L(l2) / 2 * np.sum(wl * wl)
    dual = np.sum(al * yl - al * al / 2) / n - L(l2) / 2 * np.sum(v * v)
    reference = float(primal - dual)
    assert 1e5 < cert.primal and 1e-7 < reference / cert.primal < 1e-6
    assert abs(cert.gap - reference) <= 1e-11 * reference
    # The problem is one where the subtraction does lose digits:
    assert abs((cert.primal - cert.dual) - reference) > 1e-10 * reference


@pytest.mark.parametrize("l1_ratio, free", [(0.0, False), (0.4, False), (0.0, True)])
def test_the_block_form_gives_the_one_block_certificate(l1_ratio, free):
    """block_sums over blocks of rows, then combine (fastdual.dask's rounds): the certificate's
    (P, D, gap) of the whole data in one pass, to rounding."""
    from fastdual._core import gap as _gap
    from fastdual._problem import build_problem
    X, y = problem_for("logistic", n=90, d=5, seed=2, sparse=True)
    problem = build_problem(X, y, loss="logistic", alpha=0.05, C=None, l1_ratio=l1_ratio,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={}, regularize_intercept=not free)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(6)
    duals = problem.feasible_duals(rng.random(90) * problem.duals_from_margins(w))
    primal, dual, gap = problem.certificate(w, duals)
    v, sums = np.zeros(6), np.zeros(3)
    for rows in (slice(0, 25), slice(25, 60), slice(60, 90)):
        Xk = sp.csr_matrix(X[rows])
        sums += _gap.block_sums(Xk.data, Xk.indices, Xk.indptr, Xk.shape[0], 5, problem.bias,
                                problem.y[rows], problem.sample_weight[rows], w, duals[rows],
                                problem.l2, 90, problem.loss, v, free)
    blocks = _gap.combine(w, v, *sums, 90, problem.l2, problem.l1, free)
    np.testing.assert_allclose(blocks, (primal, dual, gap), rtol=1e-12)
    assert blocks[2] == pytest.approx(blocks[0] - blocks[1], rel=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_another_librarys_free_intercept_model_is_certified_near_its_suboptimality(seed):
    """libsvm's linear SVC (scikit-learn's SVC, a free intercept): the margin duals of a hinge
    model are poor, and the refinement (SDCA's free intercept, its duals projected onto
    sum_i c_i alpha_i = 0 at each check) brings the certified gap within 10x of the true
    suboptimality + 1e-3 (without it: 0.05-0.4 against 1e-5)."""
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC
    X, y = make_classification(300, 10, random_state=seed, flip_y=0.1)
    y = np.where(y > 0, 1.0, -1.0)
    svc = SVC(kernel="linear", C=1.0, tol=1e-3).fit(X, y)
    objective = dict(loss="hinge", alpha=1.0 / X.shape[0], regularize_intercept=False)
    optimum = fastdual.train(X, y, tol=1e-10, max_epochs=100000, **objective)
    assert optimum.converged_
    cert = fastdual.duality_gap(X, y, svc.coef_.ravel(), float(svc.intercept_[0]), **objective)
    suboptimality = (cert.primal - optimum.primal_) / cert.primal
    assert cert.relative_gap <= 10 * suboptimality + 1e-3
    assert cert.dual <= optimum.primal_ * (1 + 1e-12)     # a true bound
