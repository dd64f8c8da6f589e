"""solver="cd": primal coordinate descent with working sets (docs/math.md 4k), against
scikit-learn's coordinate descent and LIBLINEAR, and against the optimality conditions checked
directly on the returned coefficients."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import ElasticNet, Lasso, LogisticRegression

import fastdual
from fastdual._problem import build_problem
from fastdual._validation import check_matrix
from fastdual.solvers import _newton
from conftest import SMOOTH_LOSSES, binary_problem, np_objective, problem_for

OPTIONS = [dict(working_set=True, anderson=True), dict(working_set=True, anderson=False),
           dict(working_set=False, anderson=False),
           # (newton: the proximal Newton steps of the losses other than the squared one)
           dict(working_set=True, anderson=True, newton=False),
           dict(working_set=False, anderson=False, newton=False)]


def sparse_regression(n=120, d=60, seed=0, intercept=0.0):
    """A sparse ground truth, correlated columns: the l1 problems cd is for."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, d))
    X = base + 0.5 * np.roll(base, 1, axis=1)
    w = np.zeros(d)
    w[rng.choice(d, 6, replace=False)] = rng.standard_normal(6) * 2
    y = X @ w + 0.3 * rng.standard_normal(n) + intercept
    return X, y


def lambda_max(X, y):
    return float(np.max(np.abs(X.T @ y))) / X.shape[0]


def cd(X, y, **kwargs):
    kwargs.setdefault("tol", 1e-12)
    kwargs.setdefault("max_epochs", 100000)
    return fastdual.train(X, y, solver="cd", **kwargs)


def objective(X, y, model, loss, alpha, l1_ratio, **kwargs):
    return np_objective(X, y, model.coef_, model.intercept_, loss=loss, l2=alpha * (1 - l1_ratio),
                        l1=alpha * l1_ratio, **kwargs)


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
@pytest.mark.parametrize("fraction", [0.5, 0.1, 0.01])
@pytest.mark.parametrize("options", OPTIONS)
def test_lasso_and_elastic_net_reach_scikit_learns_optimum(l1_ratio, fraction, options):
    X, y = sparse_regression()
    alpha = fraction * lambda_max(X, y)
    reference = (Lasso(alpha=alpha, fit_intercept=False, tol=1e-12, max_iter=1000000)
                 if l1_ratio == 1.0 else
                 ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-12,
                            max_iter=1000000)).fit(X, y)
    model = cd(X, y, loss="squared", alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False,
               **options)
    assert model.converged_
    ours = objective(X, y, model, "squared", alpha, l1_ratio)
    theirs = np_objective(X, y, reference.coef_, 0.0, loss="squared", l2=alpha * (1 - l1_ratio),
                          l1=alpha * l1_ratio)
    assert ours == pytest.approx(theirs, rel=1e-8)
    assert ours <= theirs * (1 + 1e-10)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
@pytest.mark.parametrize("weighted", [False, True])
def test_free_intercept_is_scikit_learns_centred_intercept(l1_ratio, weighted):
    X, y = sparse_regression(seed=1, intercept=3.0)
    weights = np.random.default_rng(1).uniform(0.2, 3.0, X.shape[0]) if weighted else None
    alpha = 0.05 * lambda_max(X, y - y.mean())
    reference = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=1e-12, max_iter=1000000)
    reference.fit(X, y, sample_weight=weights)
    model = cd(X, y, loss="squared", alpha=alpha, l1_ratio=l1_ratio, sample_weight=weights,
               regularize_intercept=False)
    assert model.intercept_mode == "free" and model.converged_
    kwargs = dict(loss="squared", l2=alpha * (1 - l1_ratio), l1=alpha * l1_ratio,
                  sample_weight=weights, fit_intercept=True, regularize_intercept=False)
    ours = np_objective(X, y, model.coef_, model.intercept_, **kwargs)
    theirs = np_objective(X, y, reference.coef_, reference.intercept_, **kwargs)
    assert ours == pytest.approx(theirs, rel=1e-8)
    assert model.intercept_ == pytest.approx(reference.intercept_, rel=1e-6)


@pytest.mark.filterwarnings("ignore:Liblinear failed to converge")
@pytest.mark.parametrize("newton", [True, False])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_l1_logistic_reaches_liblinears_optimum(fit_intercept, newton):
    """LIBLINEAR's -s 6 (scikit-learn's liblinear solver): ||w||_1 + C sum_i log(1 + e^-y x.w),
    its intercept a feature of value intercept_scaling penalised like the others, which is
    fastdual's regularised intercept with alpha = 1 / (C n)."""
    X, y = binary_problem(n=150, d=30, seed=3, noise=1.0)
    C, scaling = 0.2, 2.0
    reference = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=C, tol=1e-10,
                                   max_iter=100000, fit_intercept=fit_intercept, random_state=0,
                                   intercept_scaling=scaling).fit(X, y)
    model = cd(X, y, loss="logistic", C=C, l1_ratio=1.0, fit_intercept=fit_intercept,
               intercept_scaling=scaling, newton=newton)
    assert model.converged_
    alpha = 1.0 / (C * X.shape[0])
    kwargs = dict(loss="logistic", l2=0.0, l1=alpha, fit_intercept=fit_intercept,
                  intercept_scaling=scaling)
    intercept = float(reference.intercept_[0]) if fit_intercept else 0.0
    ours = np_objective(X, y, model.coef_, model.intercept_, **kwargs)
    theirs = np_objective(X, y, reference.coef_[0], intercept, **kwargs)
    assert ours == pytest.approx(theirs, rel=1e-7)
    assert ours <= theirs * (1 + 1e-9)
    np.testing.assert_array_equal(model.coef_ != 0, reference.coef_[0] != 0)


def smooth_gradient(X, y, coef, intercept, loss, sample_weight=None, gamma=1.0):
    """(1/n) X^T (c phi'(X coef + intercept)) and its intercept's entry, in NumPy."""
    n = X.shape[0]
    c = np.ones(n) if sample_weight is None else sample_weight * n / sample_weight.sum()
    z = X @ coef + intercept
    if loss == "squared":
        slope = z - y
    elif loss == "logistic":
        slope = -y / (1.0 + np.exp(y * z))
    elif loss == "squared_hinge":
        slope = -2.0 * y * np.maximum(0.0, 1.0 - y * z)
    elif loss == "squared_epsilon_insensitive":          # (epsilon 0.1, the default)
        slope = np.sign(z - y) * np.maximum(0.0, np.abs(z - y) - 0.1)
    else:
        slope = -y * np.clip((1.0 - y * z) / gamma, 0.0, 1.0)
    return X.T @ (c * slope) / n, float(np.sum(c * slope)) / n


@pytest.mark.parametrize("loss", SMOOTH_LOSSES)
@pytest.mark.parametrize("l1_ratio", [1.0, 0.6, 0.0])
@pytest.mark.parametrize("intercept", ["none", "regularized", "free"])
def test_the_returned_coefficients_satisfy_the_optimality_conditions(loss, l1_ratio, intercept):
    """0 in grad_j + l2 w_j + l1 d|w_j| for every coefficient (the regularised intercept's weight
    w_b = intercept_ / s included), and a zero derivative in a free intercept."""
    X, y = problem_for(loss, n=100, d=12, seed=7)
    weights = np.random.default_rng(7).uniform(0.5, 2.0, 100)
    alpha, scaling = 0.05, 1.5
    model = cd(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio, sample_weight=weights,
               fit_intercept=intercept != "none", regularize_intercept=intercept != "free",
               intercept_scaling=scaling, tol=1e-13)
    l2, l1 = alpha * (1 - l1_ratio), alpha * l1_ratio
    regression = fastdual.LOSSES[loss].task == "regression"
    target = y if regression else np.where(y > 0, 1.0, -1.0)
    grad, grad_b = smooth_gradient(X, target, model.coef_, model.intercept_, loss, weights)
    w = model.coef_
    if intercept == "regularized":
        grad = np.append(grad, grad_b * scaling)
        w = np.append(w, model.intercept_ / scaling)
    grad = grad + l2 * w
    on = w != 0
    tol = 1e-7
    np.testing.assert_array_less(np.abs(grad[on] + l1 * np.sign(w[on])), tol)
    np.testing.assert_array_less(np.abs(grad[~on]), l1 + tol)
    if intercept == "free":
        assert abs(grad_b) < tol
    if l1_ratio == 1.0:
        assert not on.all()       # the l1 problem here has zeros: the test reaches both cases


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_csr_csc_dense_and_fortran_input_give_the_same_model(loss):
    X, y = problem_for(loss, n=90, d=20, seed=2, sparse=True, density=0.4)
    kwargs = dict(loss=loss, alpha=0.02, l1_ratio=0.8, tol=1e-12)
    models = [cd(A, y, **kwargs) for A in
              (X, X.tocsc(), X.toarray(), np.asfortranarray(X.toarray()))]
    for other in models[1:]:
        np.testing.assert_allclose(other.coef_, models[0].coef_, rtol=1e-9, atol=1e-11)
        assert other.intercept_ == pytest.approx(models[0].intercept_, rel=1e-9, abs=1e-11)


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_is_close_to_float64(sparse):
    X, y = sparse_regression(seed=4)
    X = sp.csr_matrix(X) if sparse else X
    kwargs = dict(loss="squared", alpha=0.05 * lambda_max(X.toarray() if sparse else X, y),
                  l1_ratio=1.0, fit_intercept=False, tol=1e-10)
    model64 = cd(X, y, **kwargs)
    model32 = cd(X.astype(np.float32), y, **kwargs)
    X32 = X.astype(np.float32).astype(np.float64)
    assert model32.converged_
    np.testing.assert_allclose(model32.coef_, model64.coef_, atol=1e-5)
    # the float32 model is the optimum of the float32 data
    reference = Lasso(alpha=kwargs["alpha"], fit_intercept=False, tol=1e-12,
                      max_iter=100000).fit(X32, y)
    np.testing.assert_allclose(model32.coef_, reference.coef_, atol=1e-6)


@pytest.mark.parametrize("loss", SMOOTH_LOSSES)
def test_working_sets_and_extrapolation_change_the_time_not_the_answer(loss):
    X, y = problem_for(loss, n=80, d=40, seed=5)
    models = [cd(X, y, loss=loss, alpha=0.03, l1_ratio=0.9, tol=1e-12, **options)
              for options in OPTIONS]
    values = [objective(X, y, model, loss, 0.03, 0.9, fit_intercept=True) for model in models]
    for model, value in zip(models[1:], values[1:]):
        assert model.converged_
        assert value == pytest.approx(values[0], rel=1e-11)
        # (a relative gap of 1e-12 puts the coefficients within about 1e-5 of the optimum)
        np.testing.assert_allclose(model.coef_, models[0].coef_, atol=1e-5)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("intercept", ["regularized", "free"])
def test_sample_weights_are_repeated_rows(loss, intercept):
    X, y = problem_for(loss, n=40, d=8, seed=6)
    counts = np.random.default_rng(6).integers(0, 4, 40)
    counts[:2] = 1
    kwargs = dict(loss=loss, alpha=0.02, l1_ratio=0.7, regularize_intercept=intercept == "regularized")
    weighted = cd(X, y, sample_weight=counts, **kwargs)
    repeated = cd(np.repeat(X, counts, axis=0), np.repeat(y, counts), **kwargs)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-8)
    assert weighted.intercept_ == pytest.approx(repeated.intercept_, abs=1e-8)


def test_refuses_a_non_smooth_loss_and_names_the_solvers_that_train_it():
    X, y = binary_problem(n=20, d=3)
    with pytest.raises(ValueError, match=r"^solver='cd' does not support loss='hinge' \(it needs "
                                         r"a loss that is smooth.*trained by solver in "
                                         r"\['agm', 'rda', 'sdca', 'spdc'\]"):
        fastdual.train(X, y, loss="hinge", solver="cd")
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['shrinking'\]: solver='cd' "
                                         r"has the options \['anderson', 'newton', "
                                         r"'screening', 'support_newton', 'working_set'\]"):
        fastdual.train(X, y, loss="logistic", solver="cd", shrinking=True)
    with pytest.raises(TypeError, match=r"^working_set must be True or False"):
        fastdual.train(X, y, loss="logistic", solver="cd", working_set=1)


def test_epochs_are_passes_and_the_budget_is_kept_to_one_step():
    """An epoch of cd is an outer step: the scores' pass and at most INNER_PASSES passes of
    sweeps; the loop's budget is passed by at most one step."""
    from fastdual.solvers.cd import INNER_PASSES
    X, y = sparse_regression(n=200, d=300, seed=8)
    alpha = 0.02 * lambda_max(X, y)
    model = cd(X, y, loss="squared", alpha=alpha, l1_ratio=1.0, tol=1e-10, check_every=1)
    epochs = [entry["epoch"] for entry in model.history_]
    steps = np.diff([0] + epochs)
    assert steps.min() >= 1 and steps.max() <= 2 + INNER_PASSES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        short = cd(X, y, loss="squared", alpha=alpha, l1_ratio=1.0, max_epochs=4)
    assert 4 <= short.n_epochs_ <= 4 + 1 + INNER_PASSES
    assert short.history_[-1]["epoch"] == short.n_epochs_


def test_warm_start_from_a_model_continues_where_it_stopped():
    X, y = sparse_regression(seed=9)
    alpha = 0.05 * lambda_max(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        rough = cd(X, y, loss="squared", alpha=alpha, l1_ratio=1.0, max_epochs=2)
    fresh = cd(X, y, loss="squared", alpha=alpha, l1_ratio=1.0, tol=1e-10)
    warm = cd(X, y, loss="squared", alpha=alpha, l1_ratio=1.0, tol=1e-10, warm_start=rough)
    assert warm.primal_ <= rough.primal_
    assert warm.n_epochs_ <= fresh.n_epochs_
    np.testing.assert_allclose(warm.coef_, fresh.coef_, atol=1e-7)


def test_the_column_view_reads_csc_and_fortran_input_without_a_copy():
    X, _ = sparse_regression(n=30, d=10)
    fortran = np.asfortranarray(X)
    assert np.shares_memory(check_matrix(fortran).columns()[0], fortran)
    csc = sp.csc_matrix(X)
    data, indices, indptr = check_matrix(csc).columns()
    assert data is csc.data and indices is csc.indices and indptr is csc.indptr
    # CSR and C order: converted once, then kept
    for A in (sp.csr_matrix(X), np.ascontiguousarray(X)):
        matrix = check_matrix(A)
        first = matrix.columns()
        assert matrix.columns() is first
        dense = (sp.csc_matrix((first[0], first[1], first[2]), shape=X.shape).toarray()
                 if first[1].size else first[0].reshape(X.shape, order="F"))
        np.testing.assert_array_equal(dense, X)


def test_a_csc_with_unsorted_columns_trains_and_repeated_entries_are_refused():
    X, y = sparse_regression(n=40, d=6, seed=10)
    csc = sp.csc_matrix(X)
    order = np.concatenate([np.arange(a, b)[::-1] for a, b in zip(csc.indptr, csc.indptr[1:])])
    unsorted = sp.csc_matrix((csc.data[order], csc.indices[order], csc.indptr), shape=X.shape)
    assert not unsorted.has_sorted_indices
    kwargs = dict(loss="squared", alpha=0.05, l1_ratio=1.0, tol=1e-12)
    np.testing.assert_allclose(cd(unsorted, y, **kwargs).coef_, cd(X, y, **kwargs).coef_,
                               atol=1e-10)
    # every entry split in two halves stored separately: refused, as in CSR
    doubled = sp.csc_matrix((np.repeat(csc.data / 2, 2), np.repeat(csc.indices, 2),
                             csc.indptr * 2), shape=X.shape)
    with pytest.raises(ValueError, match="stores the same column twice"):
        cd(doubled, y, **kwargs)


@pytest.mark.parametrize("loss", SMOOTH_LOSSES)
@pytest.mark.parametrize("intercept", ["regularized", "free"])
def test_every_step_lowers_the_objective(loss, intercept):
    """Each coordinate step minimises an upper bound of P equal to P at the current weight, an
    extrapolation is kept only if it lowers P, and a proximal Newton step is taken only with a
    sufficient decrease of P: the primal of successive checks never rises."""
    X, y = problem_for(loss, n=120, d=30, seed=11)
    model = cd(X, y, loss=loss, alpha=0.01, l1_ratio=0.8, tol=1e-10, check_every=1,
               regularize_intercept=intercept == "regularized")
    primal = np.array([entry["primal"] for entry in model.history_])
    assert len(primal) > 3
    assert np.all(np.diff(primal) <= 1e-13 * np.abs(primal[1:]))


def test_proximal_newton_pays_where_the_curvature_bound_is_loose():
    """Near-separable l1 logistic: most samples' curvature is far below the bound 1/4 the plain
    sweeps step with, which the proximal Newton model uses exactly; the same certified optimum
    in under half the passes (cd's epochs count the entries of X read, so this counts work)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 400))
    w = np.zeros(400)
    w[:10] = 3.0
    y = np.where(X @ w + 0.3 * rng.standard_normal(200) > 0, 1.0, -1.0)
    alpha = float(np.max(np.abs(X.T @ (-0.5 * y)))) / 200 / 100
    newton, plain = (cd(X, y, loss="logistic", alpha=alpha, l1_ratio=1.0, tol=1e-8,
                        newton=flag) for flag in (True, False))
    assert newton.converged_ and plain.converged_
    value = objective(X, y, newton, "logistic", alpha, 1.0, fit_intercept=True)
    assert value == pytest.approx(objective(X, y, plain, "logistic", alpha, 1.0,
                                            fit_intercept=True), rel=1e-7)
    assert 2 * newton.n_epochs_ < plain.n_epochs_


@pytest.mark.parametrize("layout", ["sparse", "dense"])
@pytest.mark.parametrize("free_intercept", [False, True])
def test_model_sweeps_continued_one_at_a_time_are_the_same_sweeps(free_intercept, layout):
    """The proximal Newton model's sweeps, run one per call with the curvatures of the first
    call given (how the extrapolating driver continues them), are the sweeps of one call, bit
    for bit: w, the margins' change r and the model's derivative q; and the iterates one call
    records (points, margins) are the states after each of them. Sparse columns run on the
    kernel's packed state (h, r, q interleaved), dense ones on the vectors: both against numpy."""
    from fastdual.solvers import _cd
    rng = np.random.default_rng(3)
    n, d, sweeps = 80, 30, 6
    X = sp.random(n, d, density=0.3, random_state=3, format="csc") * 5.0
    X.data += 1.0
    if layout == "sparse":
        columns = (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32))
    else:
        empty = np.empty(0, dtype=np.int32)
        columns = (np.asfortranarray(X.toarray()).ravel(order="F"), empty, empty)
    h = rng.uniform(0.0, 0.25, n) / n
    g = rng.standard_normal(n) / n
    ws = np.arange(d + 1, dtype=np.int32)          # every feature and the intercept
    floor = np.full(d + 1, 1e-8)
    bound = np.full(d + 1, 10.0)    # the global curvature bounds (the violation's scale)
    l2, l1 = 0.0, 0.02

    packed = np.full(_cd.packed_length(n), np.nan)

    def start():
        w, r, q = np.zeros(d + 1), np.zeros(n), g.copy()
        return w, r, q, (*columns, n, d, 1.0, h, w, r, q, ws, floor, bound, l2, l1,
                         free_intercept)

    w, r, q, args = start()
    points, margins = np.full((sweeps + 1, d + 1), np.nan), np.full((sweeps + 1, n), np.nan)
    done, *_ = _cd.model_sweeps(*args, sweeps, 0.0, 0.0, np.empty(d + 1), np.empty(d + 1),
                                packed, False, points, margins)
    assert done == sweeps
    one_call = (w, r, q)

    w, r, q, args = start()
    curvature, hsums = np.empty(d + 1), np.empty(d + 1)
    states = [(w.copy(), r.copy())]
    done = _cd.model_sweeps(*args, 1, 0.0, 0.0, curvature, hsums, packed)[0]
    states.append((w.copy(), r.copy()))
    for _ in range(sweeps - 1):
        done += _cd.model_sweeps(*args, 1, 0.0, 0.0, curvature, hsums, packed, True)[0]
        states.append((w.copy(), r.copy()))
    assert done == sweeps
    for first, second in zip(one_call, (w, r, q)):
        np.testing.assert_array_equal(first, second)
    for row, (w_s, r_s) in enumerate(states):
        np.testing.assert_array_equal(points[row], w_s[ws])
        np.testing.assert_array_equal(margins[row], r_s)
    assert np.count_nonzero(w) > 0
    np.testing.assert_allclose(r, X @ w[:d] + w[d], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(q, g + h * r, rtol=1e-12, atol=1e-14)
    if layout == "sparse":
        # work space or recorded iterates of the wrong size: refused, not overrun
        with pytest.raises(ValueError, match="packed_state"):
            _cd.model_sweeps(*args, 1, 0.0, 0.0, curvature, hsums, packed[:4 * n], True)
    with pytest.raises(ValueError, match="points and margins"):
        _cd.model_sweeps(*args, 1, 0.0, 0.0, curvature, hsums, packed, True, np.empty((2, d)),
                         np.empty((2, n)))


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_extrapolated_model_sweeps_reach_a_lower_model_than_plain_ones(layout, monkeypatch):
    """Collinear raw columns (every row's counts scaled by its length): the proximal Newton
    model's sweeps zigzag, and the extrapolation of every ANDERSON_K sweeps reaches a lower
    model value in the same number of sweeps, MODEL_SWEEPS (docs/math.md 4k, "Raw text")."""
    from fastdual.solvers import cd as cd_module
    rng = np.random.default_rng(5)
    n, d = 300, 40
    X = np.abs(rng.standard_normal((n, d))) * rng.lognormal(0.0, 1.0, (n, 1))
    if layout == "sparse":
        X = sp.csr_matrix(X)
    y = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
    kernel, swept = cd_module._cd.model_sweeps, []

    def counted(*args):
        result = kernel(*args)
        swept[-1] += result[0]
        return result

    monkeypatch.setattr(cd_module._cd, "model_sweeps", counted)
    values = {}
    for anderson in (False, True):
        swept.append(0)
        problem = build_problem(X, y, loss="logistic", alpha=None, C=1.0, l1_ratio=1.0,
                                fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                                loss_params={})
        solver = cd_module.CD(problem, dict(working_set=True, anderson=anderson, newton=True,
                                            screening=False), seed=0)
        ws = np.arange(d + 1, dtype=np.int32)
        loss = _newton.loss_terms(solver.y, solver.cn, solver.z, solver.loss, solver.u,
                                  solver.h)
        np.copyto(solver.trial, solver.w)
        _, violation = solver._model_sweeps(ws, 0.0, np.empty(d + 1), np.empty(d + 1))
        r = solver.r
        values[anderson] = (float(solver.u @ r + 0.5 * solver.h @ (r * r))
                            + problem.l1 * np.abs(solver.trial[ws]).sum())
        assert violation > 0.0 and loss > 0.0
    assert swept == [cd_module.MODEL_SWEEPS] * 2
    assert values[True] < values[False]


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_a_free_intercept_on_uncentred_features_converges_as_centred_ones(loss):
    """Uniform [0, 1] features: the intercept's column and theirs nearly parallel. The free
    intercept is kept at its exact minimiser (the features step on centred columns), so the
    same problem with centred features (the same optimum, the intercept shifted) takes about
    as many passes; a cyclic intercept coordinate had stopped at a relative gap of 0.26."""
    rng = np.random.RandomState(42)
    X = rng.rand(15, 30)
    y = rng.randint(0, 3, 15).astype(float)
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
    alpha = fastdual.alpha_max(X, y, loss=loss) / 100
    kwargs = dict(loss=loss, alpha=alpha, l1_ratio=1.0, regularize_intercept=False, tol=1e-10,
                  max_epochs=1000)
    raw, centred = cd(X, y, **kwargs), cd(X - X.mean(axis=0), y, **kwargs)
    assert raw.converged_ and centred.converged_
    assert raw.n_epochs_ <= 2 * centred.n_epochs_ + 20
    np.testing.assert_allclose(raw.coef_, centred.coef_, atol=1e-5)
    assert raw.intercept_ == pytest.approx(centred.intercept_ - X.mean(axis=0) @ centred.coef_,
                                           abs=1e-5)


@pytest.mark.parametrize("loss", SMOOTH_LOSSES)
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_the_optimum_is_scipys_on_the_split_smooth_problem(loss, l1_ratio):
    """An independent reference: w = p - m with p, m >= 0 turns the l1 term into the linear
    l1 sum(p + m), a smooth bound-constrained problem that scipy's L-BFGS-B solves with its own
    gradients (NumPy here); same objective to 1e-8 relative, cd's no higher than it."""
    from scipy.optimize import minimize
    X, y = problem_for(loss, n=60, d=8, seed=13)
    alpha, d = 0.02, X.shape[1]
    l2, l1 = alpha * (1 - l1_ratio), alpha * l1_ratio
    regression = fastdual.LOSSES[loss].task == "regression"
    target = y if regression else np.where(y > 0, 1.0, -1.0)
    kwargs = dict(loss=loss, l2=l2, l1=l1, fit_intercept=True, regularize_intercept=False)

    def value_and_gradient(v):
        w, b = v[:d] - v[d:2 * d], v[2 * d]
        grad, grad_b = smooth_gradient(X, target, w, b, loss)
        grad = grad + l2 * w
        value = np_objective(X, y, w, b, **{**kwargs, "l1": 0.0}) + l1 * np.sum(v[:2 * d])
        return value, np.concatenate([grad + l1, -grad + l1, [grad_b]])

    bounds = [(0, None)] * (2 * d) + [(None, None)]
    reference = minimize(value_and_gradient, np.zeros(2 * d + 1), jac=True, method="L-BFGS-B",
                         bounds=bounds, options=dict(ftol=1e-16, gtol=1e-12, maxiter=100000))
    model = cd(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio, regularize_intercept=False)
    ours = np_objective(X, y, model.coef_, model.intercept_, **kwargs)
    assert ours == pytest.approx(reference.fun, rel=1e-8)
    assert ours <= reference.fun * (1 + 1e-12)


def test_l1_squared_hinge_reaches_liblinears_optimum():
    """LIBLINEAR's -s 5 (liblinear-official): ||w||_1 + C sum_i max(0, 1 - y_i x_i . w)^2, its
    intercept a regularised feature (-B 1): fastdual's regularised intercept at alpha = 1/(C n)."""
    ll = pytest.importorskip("liblinear.liblinearutil")
    X, y = binary_problem(n=150, d=30, seed=5, noise=1.0)
    C = 0.3
    reference = ll.train(y, X, f"-s 5 -c {C} -B 1 -e 1e-12 -q")
    labels = reference.get_labels()
    w_ll = np.array([reference.w[j] for j in range(31)]) * (1 if labels[0] == 1 else -1)
    model = cd(X, y, loss="squared_hinge", C=C, l1_ratio=1.0)
    kwargs = dict(loss="squared_hinge", l2=0.0, l1=1.0 / (C * X.shape[0]), fit_intercept=True)
    ours = np_objective(X, y, model.coef_, model.intercept_, **kwargs)
    theirs = np_objective(X, y, w_ll[:30], w_ll[30], **kwargs)
    assert ours == pytest.approx(theirs, rel=1e-8)
    assert ours <= theirs * (1 + 1e-12)


def _scores_of(grads, w, l2, l1, curvatures, intercept=None):
    """_cd.scores over features at odd indices 1, 3, ... of a 2k-feature X (the even ones are
    screened, with curvature bounds of 1e-12, so that a bound read at the wrong index shows),
    feature 2m+1 a one-entry column (x = 1 at sample m) whose gradient x . u is grads[m]. With
    intercept = (w_b, g_b, L_b): LIBLINEAR's regularised intercept feature (bias 1) at w_b, its
    gradient sum(u) = g_b (from one more sample that no feature has) and its bound L_b.
    Returns the features' scores and the intercept's (None without one)."""
    from fastdual.solvers import _cd
    k = len(grads)
    d = 2 * k
    rows = np.arange(k)
    X = sp.csc_matrix((np.ones(k), (rows, 2 * rows + 1)), shape=(k + 1, d))
    u = np.r_[np.asarray(grads, dtype=float), 0.0]
    bias, coef, bounds = 0.0, np.zeros(d + 1), np.full(d + 1, 1e-12)
    coef[1::2][:k] = w
    bounds[1::2][:k] = curvatures
    if intercept is not None:
        bias = 1.0
        coef[d], u[k], bounds[d] = intercept[0], 0.0, intercept[2]
        u[k] = intercept[1] - u.sum()
    out = np.zeros(d + 1)
    largest = _cd.scores(X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32), k + 1,
                         d, bias, u, coef, l2, l1, False,
                         np.arange(1, d, 2, dtype=np.int32), bounds, out)
    assert largest == out.max()
    assert np.all(out[0:d:2] == 0.0)        # the screened features' entries left alone
    return out[1::2][:k], (out[d] if intercept is not None else None)


def _brute_force_step(grad, w, l2, l1, curv):
    """argmin_t grad (t - w) + curv (t - w)^2 / 2 + l2 t^2 / 2 + l1 |t| by a bracketing
    search on a fine grid and golden sections (independent of soft_threshold)."""
    from scipy.optimize import minimize_scalar

    def f(t):
        return grad * (t - w) + 0.5 * curv * (t - w) ** 2 + 0.5 * l2 * t * t + l1 * abs(t)
    span = 4.0 * (abs(w) + (abs(grad) + l1) / (curv + l2)) + 1.0
    grid = np.linspace(w - span, w + span, 20001)
    best = grid[np.argmin([f(t) for t in grid])]
    step = grid[1] - grid[0]
    if f(0.0) <= f(best):
        best = 0.0
    t = minimize_scalar(f, bounds=(best - step, best + step), method="bounded",
                        options={"xatol": 1e-14}).x
    return 0.0 if f(0.0) <= f(t) else t


@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_violation_is_the_proximal_steps_length_where_it_reaches_zero(l2):
    """The working-set score (docs/math.md 4k, "Violation"): the distance of 0 to the
    subdifferential where the coordinate's proximal step stays on w_j's side (bit for bit),
    its length times curv + l2 where it reaches 0 or crosses (checked against a brute-force
    1-D minimisation), and so continuous at w_j = 0: a weight at 1e-15 whose gradient points
    across 0 scores about curv 1e-15, not 2 l1."""
    l1, curv = 0.7, 3.0
    rng = np.random.default_rng(0)
    w = np.r_[rng.normal(0.0, 1.0, 40), [1e-15, -1e-15, 1e-13, 0.0, 0.0, 0.2, -0.2]]
    grads = np.r_[rng.normal(0.0, 2.0, 40), [l1, -l1, l1 * (1 + 1e-7), 0.5, -1.1, 1.3, -1.3]]
    curvatures = np.r_[rng.uniform(0.5, 5.0, 40), np.full(7, curv)]
    scores, _ = _scores_of(grads, w, l2, l1, curvatures)
    crossings = 0
    for j in range(w.shape[0]):
        g = grads[j] + l2 * w[j]
        if w[j] == 0.0:
            assert scores[j] == max(abs(g) - l1, 0.0)
            continue
        distance = abs(g + l1 * np.sign(w[j]))
        target = _brute_force_step(grads[j], w[j], l2, l1, curvatures[j])
        if target * w[j] > 0.0 and abs(target) > 1e-6:     # the step stays on w_j's side
            assert scores[j] == distance
        else:
            crossings += 1
            assert scores[j] <= distance
            assert scores[j] == pytest.approx((curvatures[j] + l2) * abs(w[j] - target),
                                              rel=1e-7, abs=1e-7)
    assert crossings >= 10
    # The weights at +-1e-15 with their gradient at +l1 sign(w): the distance is 2 l1.
    assert scores[40] < 1e-13 and scores[41] < 1e-13
    # At 1e-13 with its gradient past +l1 sign(w) by 7e-8: the step crosses 0, by that excess.
    assert scores[42] == pytest.approx(l1 * 1e-7, rel=1e-6)
    # With no curvature (an empty column) the distance is kept.
    flat, _ = _scores_of(grads[40:42], w[40:42], l2, l1, np.zeros(2))
    np.testing.assert_allclose(flat, 2.0 * l1, rtol=1e-12)
    # The intercept's coordinate, with its own bound: at 0.5 with its gradient pushing it to
    # 0 by 0.5 l1, the step (bound 10) stays positive: the distance 1.5 l1 (+ l2 w_b); at
    # 1e-15 with its gradient at +l1, about 10 * 1e-15.
    _, far = _scores_of(grads[:3], w[:3], l2, l1, curvatures[:3], (0.5, 0.5 * l1, 10.0))
    assert far == pytest.approx(1.5 * l1 + 0.5 * l2, rel=1e-12)
    _, near = _scores_of(grads[:3], w[:3], l2, l1, curvatures[:3], (1e-15, l1, 10.0))
    assert near < 1e-13


def test_model_sweeps_violation_is_scaled_by_the_global_bound_not_the_model():
    """The Newton model's sweeps measure w0's violation with the column's global curvature
    bound: where the model's curvature is near 0 (samples far past the margin), its proximal
    step would run to 0 and its length times that curvature would call a weight far from its
    optimum (w = 0.5, the gradient pushing it to 0 with 1.5 l1) nearly optimal."""
    from fastdual.solvers import _cd
    n, l1 = 6, 0.1
    X = sp.csc_matrix(np.ones((n, 1)))
    columns = (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32))
    h = np.full(n, 1e-12)                   # the model's curvature along w_0: 6e-12
    q = np.full(n, 0.5 * l1 / n)            # its gradient: 0.5 l1
    w, r = np.array([0.5, 0.0]), np.zeros(n)
    ws = np.array([0], dtype=np.int32)
    floor, bound = np.zeros(2), np.array([10.0, 0.0])
    _, _, first, last = _cd.model_sweeps(*columns, n, 1, 0.0, h, w, r, q, ws, floor, bound,
                                         0.0, l1, False, 1, 0.0, 0.0, np.empty(1), np.empty(1),
                                         np.empty(_cd.packed_length(n)))
    assert first == pytest.approx(1.5 * l1, rel=1e-12)
    assert last == pytest.approx(1.5 * l1, rel=1e-12)   # the sweep's own measure before its step


def test_gram_sweeps_violation_is_scaled_by_the_global_bound_not_the_model():
    """The same on the Gram path: coordinate w_1 (k = 0 in W) with a model curvature
    gram[0, 0] = 6e-12 and the bound 10 scores 1.5 l1, before the sweeps and in them."""
    from fastdual.solvers import _cd
    l1 = 0.1
    w = np.array([0.0, 0.5, 0.0])
    _, _, first, last = _cd.gram_sweeps(np.array([[6e-12]]), np.array([0.5 * l1]), w,
                                        np.array([1], dtype=np.int32), np.zeros(3),
                                        np.array([1e-12, 10.0, 1e-12]), np.zeros(1), 0.0, l1,
                                        1, 0.0, 0.0)
    assert first == pytest.approx(1.5 * l1, rel=1e-12)
    assert last == pytest.approx(1.5 * l1, rel=1e-12)
