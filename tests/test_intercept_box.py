"""SDCA's conjugate steps on a box (hinge, smooth hinge, squared hinge with LIBLINEAR's
intercept; _sdca_intercept.deflated_box_epoch, docs/solvers/sdca.md "The intercept's direction
on a box"): the optimum of the box-constrained dual QP solved by SciPy, the invariants of every
epoch (box, v = v(duals), D never lower), the kernel's own bookkeeping against a fresh build,
where the steps apply, and the epochs they save."""
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

import fastdual
from conftest import scattered_rows
from fastdual._problem import build_problem
from fastdual.solvers import SOLVERS, _sdca_intercept, sdca as sdca_module, solver_options

BOX_LOSSES = ["hinge", "smooth_hinge", "squared_hinge"]


@pytest.fixture(autouse=True)
def box_steps(monkeypatch):
    """The steps are off by default (sdca.BOX_CONJUGATE_STEPS): on for these tests."""
    monkeypatch.setattr(sdca_module, "BOX_CONJUGATE_STEPS", True)


def classification(n, d, per_row, seed, dtype=np.float64, scale=1.0):
    X, _ = scattered_rows(n, d, per_row, seed)
    rng = np.random.default_rng(seed + 100)
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0.2, 1.0, -1.0)
    return (scale * X).astype(dtype), y


def driver(X, y, loss, C=1.0, bias=1.0, weights=None, **options):
    problem = build_problem(X, y, loss=loss, alpha=None, C=C, l1_ratio=0.0, fit_intercept=True,
                            intercept_scaling=bias, sample_weight=weights, loss_params={})
    return problem, SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"], options), 0)


def box_dual(problem, duals):
    """D(duals) in NumPy, from the problem's own definition: (1/n) sum_i c_i (beta_i -
    gamma/2 beta_i^2) - l2/2 ||v||^2 with beta = a y, v = X~^T (c a) / (l2 n); -inf outside
    the box."""
    loss = problem.loss
    beta = duals * problem.y
    upper = 1.0 if problem.loss_name != "squared_hinge" else np.inf
    if np.any(beta < -1e-15) or np.any(beta > upper + 1e-15):
        return -np.inf
    c, n = problem.sample_weight, problem.n_samples
    v = problem.dual_vector(duals)
    return float(np.sum(c * (beta - loss.gamma / 2 * beta ** 2)) / n - problem.l2 / 2 * v @ v)


def scipy_box_qp(problem):
    """max D over the box by L-BFGS-B on the dense dual, to its own tolerance: an independent
    reference."""
    A = problem.X.toarray() if hasattr(problem.X, "toarray") else None
    if A is None:
        A = np.vstack([problem.X.matvec(e) for e in np.eye(problem.n_features)]).T
    A = np.hstack([A, np.full((problem.n_samples, 1), problem.bias)])
    c, n, y, l2 = problem.sample_weight, problem.n_samples, problem.y, problem.l2
    gamma = problem.loss.gamma
    Z = (c * y)[:, None] * A / (l2 * n)          # v = Z^T beta

    def negative(beta):
        v = Z.T @ beta
        value = np.sum(c * (beta - gamma / 2 * beta ** 2)) / n - l2 / 2 * v @ v
        grad = c * (1.0 - gamma * beta) / n - l2 * Z @ v
        return -value, -grad

    upper = 1.0 if problem.loss_name != "squared_hinge" else None
    result = scipy.optimize.minimize(negative, np.zeros(n), jac=True, method="L-BFGS-B",
                                     bounds=[(0.0, upper)] * n,
                                     options=dict(ftol=1e-15, gtol=1e-12, maxiter=20000))
    return -result.fun, result.x * y


@pytest.mark.parametrize("loss", BOX_LOSSES)
@pytest.mark.parametrize("sparse", [True, False])
def test_the_box_steps_reach_the_optimum_of_the_box_constrained_dual(loss, sparse):
    X, y = classification(60, 40, 6, seed=11)
    X = X if sparse else X.toarray()
    weights = np.random.default_rng(3).uniform(0.5, 2.0, 60)
    weights[7] = 0.0
    problem, sdca = driver(X, y, loss, C=3.0, bias=1.4, weights=weights)
    assert sdca.deflates_box
    reference, _ = scipy_box_qp(problem)
    model = fastdual.train(X, y, loss=loss, C=3.0, sample_weight=weights, intercept_scaling=1.4,
                           solver="sdca", tol=1e-11, max_epochs=3000)
    assert model.converged_
    # the certified dual within the certificate's gap of the QP's optimum
    assert model.dual_ <= reference + 1e-12 * abs(reference)
    assert reference - model.dual_ <= model.gap_ + 1e-9 * abs(reference)


def dual_and_v_check(problem, sdca, previous):
    duals = sdca.duals
    beta = duals * problem.y
    upper = 1.0 if problem.loss_name != "squared_hinge" else np.inf
    assert np.all(beta >= 0.0) and np.all(beta <= upper)
    v = problem.dual_vector(duals)
    np.testing.assert_allclose(sdca.v, v, rtol=0, atol=1e-11 * max(np.abs(v).max(), 1.0))
    value = box_dual(problem, duals)
    assert value >= previous - 1e-13 * abs(value)
    return value


@pytest.mark.parametrize("loss", BOX_LOSSES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sparse", [True, False])
def test_every_box_epoch_stays_in_the_box_keeps_v_and_never_lowers_the_dual(loss, dtype, sparse):
    # C large: many duals strictly inside the box, so the conjugate steps and the shift of the
    # free set are at work (checked below); LIBLINEAR's shrinking on.
    X, y = classification(300, 500, 8, seed=5, dtype=dtype, scale=2.0)
    X = X if sparse else X.toarray()
    weights = np.random.default_rng(6).uniform(0.3, 1.7, 300)
    weights[::29] = 0.0
    problem, sdca = driver(X, y, loss, C=20.0, bias=0.8, weights=weights)
    assert sdca.deflates_box
    value = -np.inf
    moved_members = 0
    for _ in range(25):
        before = sdca.duals.copy()
        sdca.epoch()
        value = dual_and_v_check(problem, sdca, value)
        assert np.all(sdca.duals[weights == 0] == before[weights == 0])
        members = np.flatnonzero(sdca.box_work[4])
        moved_members += np.count_nonzero(sdca.duals[members] != before[members])
    assert moved_members > 0
    assert sdca.box_work[1][1] > 10          # (members: the free set was not empty)


@pytest.mark.parametrize("loss", BOX_LOSSES)
def test_the_kept_free_set_and_m_match_a_fresh_build(loss):
    # Between refreshes the kernel updates F, m and m's support; they must equal what a refresh
    # builds from the same duals: F = the samples with c > 0 inside the box by FREE_MARGIN
    # (entered at the epoch that follows their step), m = X~^T (c u) / (l2 n).
    X, y = classification(200, 300, 7, seed=8, scale=1.5)
    problem, sdca = driver(X, y, loss, C=10.0, bias=1.0)
    n, d = problem.n_samples, problem.n_features
    for epoch in range(12):
        sdca.epoch()
        m, state, members, _, flag, support, in_support, _ = sdca.box_work
        n_free = int(state[1])
        listed = np.sort(members[:n_free])
        np.testing.assert_array_equal(listed, np.flatnonzero(flag))
        u = np.zeros(n)
        u[listed] = 1.0
        expected = problem.dual_vector(u * (problem.sample_weight > 0))
        np.testing.assert_allclose(m, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
        listed_support = support[:int(state[2])]
        assert len(set(listed_support.tolist())) == len(listed_support)
        assert np.all(in_support[listed_support] == 1)
        assert np.count_nonzero(in_support) == len(listed_support)
        assert np.all(m[in_support == 0] == 0.0)
        beta = sdca.duals[listed] * problem.y[listed]
        # members were inside by FREE_MARGIN when they entered or last stayed: never outside
        # the box
        assert np.all(beta >= 0.0) and np.all(beta <= (np.inf if loss == "squared_hinge"
                                                        else 1.0))


def test_shrinking_leaves_the_optimum_of_the_box_steps_unchanged():
    X, y = classification(400, 600, 9, seed=9)
    got = {}
    for shrinking in (True, False):
        model = fastdual.train(X, y, loss="hinge", C=5.0, solver="sdca", tol=1e-10,
                               max_epochs=5000, shrinking=shrinking)
        assert model.converged_
        got[shrinking] = model
    # the dual is not strictly concave: compare what the certificate fixes, the objective
    scale = abs(got[False].primal_)
    assert abs(got[True].primal_ - got[False].primal_) <= 2e-10 * scale


def counting(monkeypatch):
    calls = []
    kernel = _sdca_intercept.deflated_box_epoch

    def wrapped(*args, **kwargs):
        calls.append(1)
        return kernel(*args, **kwargs)

    monkeypatch.setattr(_sdca_intercept, "deflated_box_epoch", wrapped)
    return calls


@pytest.mark.parametrize("case, applies", [
    (dict(loss="hinge"), True),
    (dict(loss="squared_hinge"), True),
    (dict(loss="smooth_hinge"), True),
    (dict(loss="hinge", fit_intercept=False), False),
    (dict(loss="hinge", regularize_intercept=False), False),
    (dict(loss="hinge", l1_ratio=0.5), False),
    (dict(loss="logistic"), False),
    (dict(loss="squared"), False),
    (dict(loss="hinge", solver_options=dict(sdca_option="IV")), False),
    (dict(loss="hinge", solver_options=dict(sampling="uniform")), False),
    # (an acceleration that is planned: at this C its outer loop runs)
    (dict(loss="squared_hinge", C=1e4, solver_options=dict(acceleration=True)), False),
])
def test_the_box_steps_are_taken_where_they_apply_only(monkeypatch, case, applies):
    X, y = classification(120, 200, 6, seed=4)
    calls = counting(monkeypatch)
    case = dict(case)
    options = case.pop("solver_options", {})
    case.setdefault("C", 1.0)
    with warnings.catch_warnings():         # (a slow case may stop at max_epochs)
        warnings.simplefilter("ignore")
        fastdual.train(X, y, solver="sdca", tol=1e-3, max_epochs=30, **case, **options)
    assert (len(calls) > 0) == applies


def test_the_box_steps_save_epochs_on_many_free_duals(monkeypatch):
    # Nearly orthogonal rows and a large C: most duals are free, and LIBLINEAR's intercept
    # couples them all. Plain steps against the conjugate ones, the same problem and seeds.
    X, y = classification(1500, 30000, 20, seed=2)

    def epochs(conjugate):
        monkeypatch.setattr(sdca_module, "BOX_CONJUGATE_STEPS", conjugate)
        counts = []
        for seed in range(3):
            model = fastdual.train(X, y, loss="hinge", C=10.0, solver="sdca", tol=1e-6,
                                   max_epochs=3000, random_state=seed)
            assert model.converged_
            counts.append(model.n_epochs_)
        return np.median(counts)

    plain, conjugate = epochs(False), epochs(True)
    assert conjugate <= 0.7 * plain, (conjugate, plain)


def test_the_kernel_refuses_workspaces_of_the_wrong_size():
    X, y = classification(30, 20, 4, seed=1)
    problem, sdca = driver(X, y, "hinge")
    sdca.epoch()
    m, state, members, candidates, flag, support, in_support, carry = sdca.box_work
    data, indices, indptr = problem.X.kernel_args
    with pytest.raises(ValueError, match="n_features \\+ 1"):
        _sdca_intercept.deflated_box_epoch(
            data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
            problem.y, problem.sample_weight, sdca.sq_norms, sdca.duals, sdca.v, problem.loss,
            problem.l2, sdca.order, sdca.rng_state, problem.n_samples, np.inf, np.inf,
            m[:-1], state, members, candidates, flag, support, in_support, carry, True)
