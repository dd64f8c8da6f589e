"""n_jobs > 1 on one problem: SDCA's asynchronous parallel epochs (_sdca_parallel.pyx).

The threads race on v, so a parallel run is not reproducible bit for bit; what must hold is
that it reaches the same optimum, that its certificate is the one the shared gap function
computes for the returned model, that n_jobs = 1 is the sequential kernel untouched, and that
no interleaving of the threads produces a NaN or a false bound."""
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

import fastdual
from conftest import BINARY_LOSSES, REGRESSION_LOSSES, np_objective, problem_for
from fastdual import _fit, _loop
from fastdual._core.losses import new_step_state
from fastdual._problem import build_problem
from fastdual.solvers import _sdca, _sdca_parallel, sdca as sdca_module

pytestmark = pytest.mark.skipif(not _sdca_parallel.OPENMP,
                                reason="built without OpenMP: n_jobs runs one thread")

NO_ALIAS = (np.empty(0), np.empty(0, dtype=np.intp))


@pytest.fixture(autouse=True)
def threads_on_small_problems(monkeypatch):
    """The problems here are far below the driver's cutoff (PARALLEL_MIN_NNZ), under which it
    runs the sequential kernel: the threads are what these tests are about."""
    monkeypatch.setattr(sdca_module, "PARALLEL_MIN_NNZ", 0)


@pytest.fixture
def parallel_calls(monkeypatch):
    """A list that grows by one at every call of the parallel kernel."""
    calls = []
    original = _sdca_parallel.sdca_parallel_epoch

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(sdca_module._sdca_parallel, "sdca_parallel_epoch", counting)
    return calls


@pytest.fixture
def many_hot(monkeypatch):
    """Every feature in at least 1 % of the rows replicated (up to the kernel's limit),
    whatever the driver's defaults: hot and cold entries in every row."""
    monkeypatch.setattr(sdca_module, "HOT_MIN_FRACTION", 0.01)
    monkeypatch.setattr(sdca_module, "HOT_MAX", 254)


def text_like(loss, n=400, d=1000, seed=0, dtype=np.float64):
    """Sparse rows as in text: features 0-2 in every row, 3-12 in about a third of the rows
    (hot: replicated per thread), the rest in about one row each (cold)."""
    rng = np.random.default_rng(seed)
    dense = np.zeros((n, d))
    dense[:, :3] = rng.uniform(0.5, 1.5, (n, 3))
    dense[:, 3:13] = rng.standard_normal((n, 10)) * (rng.random((n, 10)) < 0.3)
    dense[:, 13:] = rng.standard_normal((n, d - 13)) * (rng.random((n, d - 13)) < 1.0 / n)
    score = dense @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n)
    y = score + 1.0 if loss in REGRESSION_LOSSES else np.where(score > np.median(score), 1.0,
                                                                  -1.0)
    return sp.csr_matrix(dense.astype(dtype)), y


def labels(loss, y):
    return y if loss in REGRESSION_LOSSES else np.where(y > 0, 1.0, -1.0)


@pytest.mark.parametrize("loss", BINARY_LOSSES + REGRESSION_LOSSES)
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_threads_reach_the_optimum_of_one(loss, l1_ratio, sparse, dtype):
    X, y = problem_for(loss, n=300, d=12, seed=3, sparse=sparse)
    X = X.astype(dtype)
    common = dict(loss=loss, alpha=0.01, l1_ratio=l1_ratio, solver="sdca", tol=1e-9,
                  max_epochs=30000, random_state=0)
    assert_two_threads_reach_one(X, y, common, dict(loss=loss, alpha=0.01, l1_ratio=l1_ratio))


def assert_two_threads_reach_one(X, y, common, objective):
    """n_jobs=2 reaches n_jobs=1's optimum to 1e-8, its primal is the objective of its
    coefficients computed apart from the package, and its certificate is duality_gap's."""
    one = fastdual.train(X, y, n_jobs=1, **common)
    two = fastdual.train(X, y, n_jobs=2, **common)
    assert one.converged_ and two.converged_
    assert abs(two.primal_ - one.primal_) <= 1e-8 * abs(one.primal_)
    alpha, l1_ratio = objective["alpha"], objective.get("l1_ratio", 0.0)
    fit_intercept = objective.get("fit_intercept", True)
    assert two.primal_ == pytest.approx(np_objective(
        X.astype(np.float64), labels(objective["loss"], y), two.coef_, two.intercept_,
        loss=objective["loss"], l2=alpha * (1 - l1_ratio), l1=alpha * l1_ratio,
        fit_intercept=fit_intercept,
        regularize_intercept=objective.get("regularize_intercept", True)), rel=1e-9)
    certified = {key: value for key, value in objective.items() if key != "fit_intercept"}
    cert = fastdual.duality_gap(X, y, two.coef_, two.intercept_ if fit_intercept else None,
                                dual_coef=two.dual_coef_, **certified)
    assert (two.primal_, two.dual_, two.gap_) == (cert.primal, cert.dual, cert.gap)


def test_two_threads_match_scipy_on_logistic():
    """An independent optimum: L-BFGS on the same objective."""
    X, y = problem_for("logistic", n=400, d=8, seed=5, sparse=True)
    alpha = 0.003
    model = fastdual.train(X, y, loss="logistic", alpha=alpha, fit_intercept=False,
                           solver="sdca", tol=1e-12, max_epochs=5000, n_jobs=2,
                           random_state=1)
    Xd = X.toarray()

    def f(w):
        z = y * (Xd @ w)
        return np.mean(np.logaddexp(0.0, -z)) + 0.5 * alpha * w @ w

    def g(w):
        z = y * (Xd @ w)
        return -(Xd.T @ (y / (1.0 + np.exp(z)))) / len(y) + alpha * w

    ref = scipy.optimize.minimize(f, np.zeros(8), jac=g, method="L-BFGS-B",
                                  options={"gtol": 1e-13, "ftol": 1e-15, "maxiter": 10000})
    assert model.primal_ == pytest.approx(ref.fun, rel=1e-9)
    np.testing.assert_allclose(model.coef_, ref.x, rtol=1e-5, atol=1e-7)


def kernel_state(problem, seed=0):
    n, d = problem.n_samples, problem.n_features
    return dict(duals=np.zeros(n), v=np.zeros(d + 1), order=np.arange(n, dtype=np.intp),
                rng=np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64),
                step_state=new_step_state(problem.loss, n))


@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared"])
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("option", [1, 4])
def test_one_block_is_the_sequential_kernel_bit_for_bit(loss, l1_ratio, sparse, dtype, option):
    """The parallel kernel with one thread runs the sequential kernel's arithmetic (shrinking
    included): same duals, v, w, order and RNG state after every epoch."""
    X, y = problem_for(loss, n=120, d=7, seed=2, sparse=sparse)
    problem = build_problem(X.astype(dtype), y, loss=loss, alpha=0.02, C=None,
                            l1_ratio=l1_ratio, fit_intercept=True, intercept_scaling=1.0,
                            sample_weight=np.random.default_rng(0).uniform(0, 2, 120),
                            loss_params={})
    data, indices, indptr = problem.X.kernel_args
    n, d = problem.n_samples, problem.n_features
    sq = problem.squared_norms()
    q_max = float(np.max(problem.sample_weight * sq)) / (problem.l2 * n)
    states = [kernel_state(problem), kernel_state(problem)]
    for state in states:
        state["w"] = state["v"] if l1_ratio == 0 else np.zeros(d + 1)
        state["active"], state["threshold"] = n, (np.inf, np.inf)
    scratch = np.empty(n, dtype=np.intp)
    for _ in range(6):
        outs = []
        for state, parallel in zip(states, (False, True)):
            args = (data, indices, indptr, n, d, problem.bias, problem.y, problem.sample_weight,
                    sq, state["duals"], state["v"], state["w"], problem.loss, problem.l2,
                    problem.l1, option, q_max)
            if parallel:
                out = _sdca_parallel.sdca_parallel_epoch(
                    *args, state["order"], state["rng"], state["active"], *state["threshold"],
                    1, 1, scratch, step_state=state["step_state"])
            else:
                out = _sdca.sdca_epoch(*args, False, state["order"], state["rng"],
                                       state["active"], *state["threshold"], *NO_ALIAS,
                                       state["step_state"])
            state["threshold"] = tuple(t if t > 0 else np.inf for t in out[:2])
            state["active"] = out[2]
            outs.append(out)
        assert outs[0] == outs[1]
        for key in ("duals", "v", "w", "order", "rng"):
            assert np.array_equal(states[0][key], states[1][key]), key
        assert np.array_equal(states[0]["step_state"], states[1]["step_state"], equal_nan=True)


def test_the_kernels_refuse_a_step_state_of_another_size():
    X, y = problem_for("logistic", n=30, d=4, seed=1, sparse=True)
    problem = build_problem(X, y, loss="logistic", alpha=0.1, C=None, l1_ratio=0.0,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    data, indices, indptr = problem.X.kernel_args
    n, d = problem.n_samples, problem.n_features
    state = kernel_state(problem)
    args = (data, indices, indptr, n, d, problem.bias, problem.y, problem.sample_weight,
            problem.squared_norms(), state["duals"], state["v"], state["v"], problem.loss,
            problem.l2, 0.0, 1, 1.0)
    wrong = np.full(2 * n - 2, np.nan)
    with pytest.raises(ValueError, match="step_state must hold"):
        _sdca.sdca_epoch(*args, False, state["order"], state["rng"], n, np.inf, np.inf,
                         *NO_ALIAS, wrong)
    with pytest.raises(ValueError, match="step_state must hold"):
        _sdca_parallel.sdca_parallel_epoch(*args, state["order"], state["rng"], n, np.inf,
                                           np.inf, 1, 1, np.empty(n, dtype=np.intp),
                                           step_state=wrong)
    assert np.isnan(wrong).all() and not state["duals"].any()


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_shrinking_in_blocks_keeps_a_permutation(loss, threads):
    """Each thread shrinks within its block; gathered afterwards, order is still a permutation
    whose first n_active entries are the active samples, and every sample shrunk sits on a
    bound of its dual box."""
    X, y = problem_for(loss, n=200, d=5, seed=4, sparse=True)
    problem = build_problem(X, y, loss=loss, alpha=0.05, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    data, indices, indptr = problem.X.kernel_args
    n, d = problem.n_samples, problem.n_features
    state = kernel_state(problem)
    active, thresholds, shrunk_any = n, (np.inf, np.inf), False
    scratch = np.empty(n, dtype=np.intp)
    for _ in range(15):
        up, down, active = _sdca_parallel.sdca_parallel_epoch(
            data, indices, indptr, n, d, problem.bias, problem.y, problem.sample_weight,
            problem.squared_norms(), state["duals"], state["v"], state["v"], problem.loss,
            problem.l2, 0.0, 1, 0.0, state["order"], state["rng"], active, *thresholds,
            min(threads, active), min(4 * threads, active), scratch)
        thresholds = tuple(t if t > 0 else np.inf for t in (up, down))
        assert np.array_equal(np.sort(state["order"]), np.arange(n))
        shrunk_any = shrunk_any or active < n
        beta = state["duals"][state["order"][active:]] * problem.y[state["order"][active:]]
        assert np.all((beta == 0.0) | (beta == problem.loss.dual_bounds(np.ones(1))[1][0]))
    assert shrunk_any


def sdca_driver(problem, **options):
    driver_class = fastdual.SOLVERS["sdca"]
    defaults = {name: option.default for name, option in driver_class.options.items()}
    return driver_class(problem, {**defaults, **options}, 0, None)


@pytest.mark.parametrize("atomic", [True, False])
@pytest.mark.parametrize("output", ["last", "average"])
def test_v_is_that_of_the_duals_after_each_check(atomic, output):
    """After parallel epochs on a dense problem (every thread adds to every entry of v):
    Atomic loses no update; Wild's v, which may have lost some, is v(duals) again once the
    point is checked. Where the certificate's v is the driver's (output="last"), the check's
    own pass sums it and the driver takes it over (no pass of its own); the point certified
    is then the kernel's w with the duals, and its certificate is that pair's. Otherwise
    (output="average") v is recomputed before the point is certified."""
    X, y = problem_for("squared_hinge", n=64, d=3, seed=1)
    problem = build_problem(X, y, loss="squared_hinge", alpha=0.01, C=None, l1_ratio=0.3,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = sdca_driver(problem, output=output)
    driver.use_threads(8)
    assert driver.atomic      # dense data: Atomic is the driver's choice
    driver.atomic = atomic
    kappa = problem.l1 / problem.l2
    for check in range(3):
        for _ in range(20):
            driver.epoch()
        w, duals = driver.point()
        w, duals = np.array(w), np.array(duals)
        if output == "average":     # repaired before the point is taken
            np.testing.assert_allclose(driver.v, problem.dual_vector(driver.duals), rtol=1e-12,
                                       atol=1e-15)
        v_out = driver.dual_vector_out()
        if output == "last" and not atomic:
            assert v_out is not None       # a drifting v is repaired by the check's pass
        checkpoint = _loop.certify(problem, w, duals, check, v_out)
        reference = problem.certificate(w, duals)
        assert (checkpoint.primal, checkpoint.dual) == reference[:2]
        driver.after_check(checkpoint)
        assert not driver.drifting
        exact = problem.dual_vector(driver.duals, l2=driver.working_l2)
        np.testing.assert_allclose(driver.v, exact, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(driver.w, np.sign(driver.v) * np.maximum(
            np.abs(driver.v) - kappa, 0.0))


def test_the_driver_runs_wild_on_wide_sparse_data_only():
    wide = sp.random(30, 20000, density=0.001, format="csr", random_state=0)
    for X, atomic in [(wide, False), (wide[:, :500].tocsr(), True), (wide.toarray(), True)]:
        problem = build_problem(X, np.where(np.arange(30) % 2, 1.0, -1.0), loss="hinge",
                                alpha=0.1, C=None, l1_ratio=0.0, fit_intercept=True,
                                intercept_scaling=1.0, sample_weight=None, loss_params={})
        driver = sdca_driver(problem)
        driver.use_threads(2)
        assert driver.atomic == atomic


@pytest.mark.parametrize("loss, l1_ratio, sparse, options", [
    ("hinge", 0.0, False, {"tol": 1e-6}),   # (hinge: sublinear, Wild loses updates here)
    ("logistic", 0.5, True, {}),
    ("squared", 0.0, True, {}),
    ("smooth_hinge", 0.0, True, {"output": "average", "tol": 1e-6}),
    ("squared_hinge", 0.0, True, {"regularize_intercept": False}),
    ("squared", 1.0, True, {"tol": 1e-4}),
    ("logistic", 0.0, True, {"acceleration": True, "alpha": 1e-4}),
])
def test_wild_reaches_the_optimum_of_one_thread(monkeypatch, loss, l1_ratio, sparse, options):
    """PASSCoDe-Wild forced on narrow data, where its additions are lost most often, with
    each of SDCA's modes (averaging, free intercept, pure l1, acceleration): the repairs
    before each certificate still bring it to the one-thread optimum, and its certificate is
    the recomputed one."""
    monkeypatch.setattr(sdca_module, "WILD_MIN_FEATURES", 0)
    X, y = problem_for(loss, n=300, d=12, seed=3, sparse=sparse)
    if not sparse:
        X = sp.csr_matrix(X)
    objective = dict(loss=loss, alpha=options.pop("alpha", 0.01), l1_ratio=l1_ratio,
                     regularize_intercept=options.pop("regularize_intercept", True))
    tol = options.pop("tol", 1e-9)
    common = dict(solver="sdca", tol=tol, max_epochs=30000, random_state=0, **objective,
                  **options)
    one = fastdual.train(X, y, n_jobs=1, **common)
    two = fastdual.train(X, y, n_jobs=2, **common)
    assert one.converged_ and two.converged_
    # both within tol of the optimum: within 2 tol of each other
    assert abs(two.primal_ - one.primal_) <= max(1e-8, 2 * tol) * abs(one.primal_)
    cert = fastdual.duality_gap(X, y, two.coef_, two.intercept_, dual_coef=two.dual_coef_,
                                **objective)
    assert (two.primal_, two.dual_, two.gap_) == (cert.primal, cert.dual, cert.gap)


@pytest.mark.parametrize("loss", BINARY_LOSSES + ["squared", "absolute"])
@pytest.mark.parametrize("sparse", [False, True])
def test_many_threads_on_tiny_problems_never_lie(loss, sparse):
    """n = 3 rows, d = 2, eight threads (each with a block of at most one sample, all racing
    on the same three entries of v), repeated: finite models whose certificate is the
    recomputed one, with the free and the regularized intercept, l2 and elastic net."""
    rng = np.random.default_rng(0)
    for repeat in range(12):
        X = rng.standard_normal((3, 2))
        y = (rng.standard_normal(3) if loss in REGRESSION_LOSSES
             else np.array([1.0, -1.0, 1.0 if repeat % 2 else -1.0]))
        if sparse:
            X = sp.csr_matrix(X)
        free = repeat % 3 == 0
        l1_ratio = 0.0 if free else (0.5 if repeat % 3 == 1 else 0.0)
        objective = dict(loss=loss, alpha=0.1, l1_ratio=l1_ratio,
                         regularize_intercept=not free)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            model = fastdual.train(X, y, solver="sdca", n_jobs=8, tol=1e-9, max_epochs=3000,
                                   check_every=1 + repeat % 3, random_state=repeat,
                                   **objective)
        assert np.all(np.isfinite(model.coef_)) and np.isfinite(model.intercept_)
        assert np.all(np.isfinite(model.dual_coef_))
        cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_,
                                    dual_coef=model.dual_coef_, **objective)
        assert (model.primal_, model.dual_, model.gap_) == (cert.primal, cert.dual, cert.gap)
        assert model.gap_ >= -1e-12 * abs(model.primal_)
        assert model.primal_ == pytest.approx(np_objective(
            X, labels(loss, y), model.coef_, model.intercept_, loss=loss,
            l2=0.1 * (1 - l1_ratio), l1=0.1 * l1_ratio, fit_intercept=True,
            regularize_intercept=not free), rel=1e-9, abs=1e-12)


def test_one_job_runs_the_sequential_kernel(parallel_calls):
    """n_jobs=1 (and None) never enters the parallel kernel, so it is the sequential path bit
    for bit; n_jobs=2 does enter it."""
    calls = parallel_calls
    for loss, l1_ratio, sparse in [("hinge", 0.0, True), ("logistic", 0.5, False),
                                   ("squared", 0.0, True)]:
        X, y = problem_for(loss, n=150, d=6, seed=8, sparse=sparse)
        common = dict(loss=loss, alpha=0.01, l1_ratio=l1_ratio, solver="sdca", tol=1e-6,
                      random_state=3)
        default = fastdual.train(X, y, **common)
        one = fastdual.train(X, y, n_jobs=1, **common)
        assert not calls
        assert np.array_equal(default.coef_, one.coef_)
        assert np.array_equal(default.dual_coef_, one.dual_coef_)
        assert default.intercept_ == one.intercept_ and default.gap_ == one.gap_
        fastdual.train(X, y, n_jobs=2, **common)
        assert calls
        calls.clear()


@pytest.mark.parametrize("n_jobs, error, message", [
    (0, ValueError, r"n_jobs must be >= 1, got 0"),
    (-2, ValueError, r"n_jobs must be >= 1, got -2"),
    (1.5, TypeError, r"n_jobs must be an integer, got 1.5"),
    ("a", TypeError, r"n_jobs must be an integer, got 'a'"),
    (True, TypeError, r"n_jobs must be an integer"),
])
def test_bad_n_jobs_is_refused_by_name(n_jobs, error, message):
    X, y = problem_for("hinge", n=20, d=3)
    with pytest.raises(error, match=message):
        fastdual.train(X, y, n_jobs=n_jobs)


@pytest.mark.parametrize("sampling", ["uniform", "weighted"])
def test_threads_refuse_draws_with_replacement(sampling):
    X, y = problem_for("hinge", n=20, d=3)
    with pytest.raises(ValueError, match=rf"n_jobs=2 runs SDCA's epochs over a permutation.*"
                                         rf"sampling='{sampling}'.*sampling='permutation'"):
        fastdual.train(X, y, solver="sdca", sampling=sampling, n_jobs=2)


def test_other_solvers_run_one_thread_with_n_jobs():
    """n_jobs is SDCA's on one problem: another solver gives the same model whatever n_jobs."""
    X, y = problem_for("logistic", n=100, d=5, seed=1)
    one = fastdual.train(X, y, loss="logistic", solver="newton", random_state=0)
    two = fastdual.train(X, y, loss="logistic", solver="newton", random_state=0, n_jobs=2)
    assert np.array_equal(one.coef_, two.coef_)


def test_hot_entries_are_the_frequent_features(many_hot):
    """The replicated entries: the features in at least HOT_MIN_FRACTION of the rows (counted
    here from the dense matrix), at most HOT_MAX of them, and the intercept's entry when there
    is one; on dense data the intercept's alone."""
    X, y = text_like("hinge", n=400, d=1000)
    counts = np.count_nonzero(X.toarray(), axis=0)
    for fit_intercept in (True, False):
        problem = build_problem(X, y, loss="hinge", alpha=0.01, C=None, l1_ratio=0.0,
                                fit_intercept=fit_intercept, intercept_scaling=1.0,
                                sample_weight=None, loss_params={})
        driver = sdca_driver(problem)
        driver.use_threads(2)
        driver.epoch()          # (the first threaded epoch chooses them)
        expected = np.flatnonzero(counts >= sdca_module.HOT_MIN_FRACTION * 400)
        assert set(range(13)) <= set(expected) and 13 < len(expected) < np.sum(counts > 0)
        if fit_intercept:
            expected = np.append(expected, 1000)
        np.testing.assert_array_equal(driver.hot_features, expected)
        features = expected[expected < 1000]
        assert np.array_equal(driver.hot_slot[features], np.arange(len(features)))
        assert np.sum(driver.hot_slot != _sdca_parallel.COLD_SLOT) == len(features)
    dense = build_problem(X.toarray(), y, loss="hinge", alpha=0.01, C=None, l1_ratio=0.0,
                          fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                          loss_params={})
    driver = sdca_driver(dense)
    driver.use_threads(2)
    driver.epoch()
    np.testing.assert_array_equal(driver.hot_features, [1000])   # the intercept's alone


def test_data_below_the_cutoff_never_sets_up_the_threads(monkeypatch, parallel_calls):
    """Where all the stored entries are fewer than PARALLEL_MIN_NNZ, n_jobs > 1 runs the
    sequential kernel without the threads' work space or the count of the hot features (a pass
    over the column indices that such small data would pay for nothing); with a cutoff below
    the active rows' entries, the next epoch sets them up and runs the threads."""
    X, y = text_like("hinge", n=400, d=1000)
    problem = build_problem(X, y, loss="hinge", alpha=0.01, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    monkeypatch.setattr(sdca_module, "PARALLEL_MIN_NNZ", X.nnz + 1)
    driver = sdca_driver(problem)
    driver.use_threads(2)
    for _ in range(3):
        driver.epoch()
    assert not parallel_calls and driver.order_scratch is None and driver.hot_features.size == 0
    monkeypatch.setattr(sdca_module, "PARALLEL_MIN_NNZ", 1)
    driver.epoch()
    assert parallel_calls and driver.order_scratch is not None and driver.hot_features.size > 0


def test_more_threads_later_get_replicas_of_their_own(many_hot):
    """use_threads again with more threads (after threaded epochs): the next epoch sizes the
    replicas' work space for them (one block of replicas per thread)."""
    X, y = text_like("hinge", n=400, d=1000)
    problem = build_problem(X, y, loss="hinge", alpha=0.01, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = sdca_driver(problem)
    for threads in (2, 6):
        driver.use_threads(threads)
        driver.epoch()
        stride = _sdca_parallel.replica_stride(driver.hot_features.size)
        assert driver.replicas.size == (threads + 1) * stride


def test_at_most_hot_max_entries_the_most_frequent(monkeypatch, many_hot):
    monkeypatch.setattr(sdca_module, "HOT_MAX", 5)
    X, y = text_like("hinge", n=400, d=1000, seed=1)
    counts = np.count_nonzero(X.toarray(), axis=0)
    problem = build_problem(X, y, loss="hinge", alpha=0.01, C=None, l1_ratio=0.0,
                            fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = sdca_driver(problem)
    driver.use_threads(3)
    driver.epoch()
    assert len(driver.hot_features) == 5
    # every feature left out is in no more rows than any feature kept
    assert counts[driver.hot_features].min() >= np.delete(counts, driver.hot_features).max()


@pytest.mark.parametrize("loss", BINARY_LOSSES + REGRESSION_LOSSES)
@pytest.mark.parametrize("penalty", ["l2", "elastic_net", "free_intercept", "no_intercept"])
@pytest.mark.parametrize("merge_every", [3, 64])
def test_hot_replicas_reach_the_optimum_of_one_thread(monkeypatch, many_hot, loss, penalty,
                                                      merge_every):
    """Text-like rows (a few features in every row): the threads replicate those entries and
    merge them every merge_every steps (3: many merges within a block; 64: at the ends of the
    blocks), and still reach the one-thread optimum, certified by the shared gap function."""
    monkeypatch.setattr(sdca_module, "MERGE_EVERY", merge_every)
    dtype = np.float32 if merge_every == 3 else np.float64
    X, y = text_like(loss, n=300, d=400, seed=2, dtype=dtype)
    objective = dict(loss=loss, alpha=0.01, l1_ratio=0.5 if penalty == "elastic_net" else 0.0,
                     fit_intercept=penalty != "no_intercept",
                     regularize_intercept=penalty != "free_intercept")
    common = dict(solver="sdca", tol=1e-9, max_epochs=30000, random_state=0, **objective)
    driver = _fit.make_driver(
        build_problem(X, y, loss=loss, alpha=0.01, C=None, l1_ratio=objective["l1_ratio"],
                      fit_intercept=objective["fit_intercept"], intercept_scaling=1.0,
                      sample_weight=None, loss_params={},
                      regularize_intercept=objective["regularize_intercept"]),
        "sdca", {}, 0, n_jobs=2)
    driver.epoch()
    assert set(range(3)) <= set(driver.hot_features)
    assert_two_threads_reach_one(X, y, common, objective)


def hot_arrays(problem, entries):
    """The kernel's description of hot entries (increasing features, then the intercept's)."""
    d = problem.n_features
    entries = np.asarray(entries, dtype=np.intp)
    slot = np.full(d, _sdca_parallel.COLD_SLOT, dtype=np.uint8)
    bits = np.zeros((d + 63) // 64, dtype=np.uint64)
    for position, j in enumerate(entries):
        if j < d:
            slot[j] = position
            bits[j // 64] |= np.uint64(1) << np.uint64(j % 64)
    return entries, slot, bits


@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("merge_every", [1, 7])
def test_one_thread_with_replicas_is_the_sequential_kernel(l1_ratio, dtype, merge_every):
    """One thread with hot entries (features 0-12 and the intercept) merged after every step
    adds each update to the shared entry exactly as the sequential kernel adds it to v and
    reads the entries back before the next margin: the sequential kernel's bits. Merged every
    7 steps, the thread's replicas still see all its own updates: the same iterates up to the
    rounding of the summed updates."""
    X, y = text_like("logistic", n=150, d=200, seed=3, dtype=dtype)
    problem = build_problem(X, y, loss="logistic", alpha=0.02, C=None, l1_ratio=l1_ratio,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    data, indices, indptr = problem.X.kernel_args
    n, d = problem.n_samples, problem.n_features
    sq = problem.squared_norms()
    q_max = float(np.max(sq)) / (problem.l2 * n)
    entries, slot, bits = hot_arrays(problem, list(range(13)) + [d])
    replicas = np.zeros(2 * _sdca_parallel.replica_stride(entries.size))
    states = [kernel_state(problem), kernel_state(problem)]
    for state in states:
        state["w"] = state["v"] if l1_ratio == 0 else np.zeros(d + 1)
    scratch = np.empty(n, dtype=np.intp)
    for _ in range(5):
        for state, parallel in zip(states, (False, True)):
            args = (data, indices, indptr, n, d, problem.bias, problem.y, problem.sample_weight,
                    sq, state["duals"], state["v"], state["w"], problem.loss, problem.l2,
                    problem.l1, 1, q_max)
            if parallel:
                _sdca_parallel.sdca_parallel_epoch(
                    *args, state["order"], state["rng"], n, np.inf, np.inf, 1, 1, scratch,
                    True,
                    entries, slot, bits, replicas, merge_every)
            else:
                _sdca.sdca_epoch(*args, False, state["order"], state["rng"], n, np.inf,
                                 np.inf, *NO_ALIAS)
        assert np.array_equal(states[0]["order"], states[1]["order"])
        for key in ("duals", "v", "w"):
            if merge_every == 1:
                assert np.array_equal(states[0][key], states[1][key]), key
            else:
                np.testing.assert_allclose(states[1][key], states[0][key], rtol=1e-10,
                                           atol=1e-13)
    if merge_every > 1:
        assert not np.array_equal(states[0]["v"], states[1]["v"])   # the test can tell


@pytest.mark.parametrize("atomic", [True, False])
def test_replicated_entries_lose_no_update(atomic):
    """Eight threads on rows that all share their features, every entry replicated: the
    merges are atomic even under Wild, so after the epochs v is v(duals) up to rounding with
    no repair (Wild's plain additions would lose updates on these entries)."""
    X, y = problem_for("squared", n=200, d=4, seed=6, sparse=True, density=0.9)
    problem = build_problem(X, y, loss="squared", alpha=0.01, C=None, l1_ratio=0.3,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    data, indices, indptr = problem.X.kernel_args
    n, d = problem.n_samples, problem.n_features
    entries, slot, bits = hot_arrays(problem, range(d + 1))
    replicas = np.zeros(9 * _sdca_parallel.replica_stride(entries.size))
    state = kernel_state(problem)
    w = np.zeros(d + 1)
    sq = problem.squared_norms()
    scratch = np.empty(n, dtype=np.intp)
    for _ in range(30):
        _sdca_parallel.sdca_parallel_epoch(
            data, indices, indptr, n, d, problem.bias, problem.y, problem.sample_weight, sq,
            state["duals"], state["v"], w, problem.loss, problem.l2, problem.l1, 1,
            float(np.max(sq)) / (problem.l2 * n), state["order"], state["rng"], n, np.inf, np.inf, 8,
            64, scratch, atomic, entries, slot, bits, replicas, 2)
    exact = problem.dual_vector(state["duals"], l2=problem.l2)
    np.testing.assert_allclose(state["v"], exact, rtol=1e-12, atol=1e-15)
    kappa = problem.l1 / problem.l2
    np.testing.assert_array_equal(w, np.sign(state["v"]) * np.maximum(
        np.abs(state["v"]) - kappa, 0.0))


def test_short_epochs_run_the_sequential_kernel(monkeypatch, parallel_calls):
    """The cutoff: an epoch whose active rows hold fewer than PARALLEL_MIN_NNZ stored entries
    runs the sequential kernel; the count follows the active set as shrinking changes it."""
    calls = parallel_calls
    X, y = text_like("hinge", n=400, d=1000, seed=4)
    problem = build_problem(X, y, loss="hinge", alpha=0.05, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = sdca_driver(problem)
    driver.use_threads(2)
    monkeypatch.setattr(sdca_module, "PARALLEL_MIN_NNZ", X.nnz + 1)
    driver.epoch()
    assert not calls
    monkeypatch.setattr(sdca_module, "PARALLEL_MIN_NNZ", 1)
    driver.epoch()
    assert calls
    shrunk = False
    for _ in range(20):
        driver.epoch()
        active = driver.order[:driver.n_active]
        assert driver._active_nnz() == np.sum(np.diff(X.indptr)[active])
        shrunk = shrunk or driver.n_active < 400
    assert shrunk


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hot_replicas_with_option_iv_and_shrinking(monkeypatch, many_hot, loss, dtype):
    """Option IV's steps and shrinking within the blocks, with hot entries merged every 3
    steps: the one-thread optimum, certified by the shared gap function."""
    monkeypatch.setattr(sdca_module, "MERGE_EVERY", 3)
    X, y = text_like(loss, n=300, d=400, seed=5, dtype=dtype)
    common = dict(loss=loss, alpha=0.01, solver="sdca", sdca_option="IV", shrinking=True,
                  tol=1e-9, max_epochs=30000, random_state=0)
    one = fastdual.train(X, y, n_jobs=1, **common)
    two = fastdual.train(X, y, n_jobs=3, **common)
    assert one.converged_ and two.converged_
    assert abs(two.primal_ - one.primal_) <= 1e-8 * abs(one.primal_)
    cert = fastdual.duality_gap(X, y, two.coef_, two.intercept_, loss=loss, alpha=0.01,
                                dual_coef=two.dual_coef_)
    assert (two.primal_, two.dual_, two.gap_) == (cert.primal, cert.dual, cert.gap)
