"""Identical rows with different targets: SDCA's block step for each such group
(fastdual.solvers.sdca.conflicting_groups, _sdca.group_steps; docs/solvers/sdca.md "Duplicated
rows"), checked against a brute-force grouping, against scipy's maximisation of the same dual
block, and end to end against scikit-learn."""
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastdual
from fastdual._problem import build_problem
from fastdual.solvers import SOLVERS, _sdca, sdca, solver_options

LOSSES = ["hinge", "squared_hinge", "smooth_hinge", "logistic", "squared"]


def planted(rng, n=40, d=12, copies=((0, 5, 9), (3, 17), (8, 22, 30, 31)), dense=False,
            dtype=np.float64):
    """A sparse matrix with rows copied onto others (groups of identical rows), and its
    brute-force grouping by the rows' contents."""
    X = sp.random(n, d, density=0.3, random_state=rng, format="csr", dtype=np.float64)
    X.data = np.round(X.data * 8) / 8 + 0.125 * rng.integers(1, 4, X.data.size)
    rows = X.toarray()
    for group in copies:
        for j in group[1:]:
            rows[j] = rows[group[0]]
    X = rows.astype(dtype) if dense else sp.csr_matrix(rows.astype(dtype))
    return X


def brute_groups(X, y):
    rows = X.toarray() if sp.issparse(X) else np.asarray(X)
    by_content = {}
    for i, row in enumerate(rows):
        by_content.setdefault(row.tobytes(), []).append(i)
    return sorted(tuple(g) for g in by_content.values()
                  if len(g) > 1 and len(set(np.asarray(y)[g].tolist())) > 1)


def found_groups(problem):
    """The groups as sorted tuples of samples; each run's samples share their target, and
    consecutive runs' targets differ."""
    group_ptr, run_ptr, members = sdca.conflicting_groups(problem)
    groups = []
    for g in range(len(group_ptr) - 1):
        runs = [members[run_ptr[r]:run_ptr[r + 1]] for r in range(group_ptr[g], group_ptr[g + 1])]
        targets = [problem.y[run] for run in runs]
        assert all(np.all(t == t[0]) for t in targets)
        assert len({float(t[0]) for t in targets}) == len(runs) >= 2
        groups.append(tuple(sorted(np.concatenate(runs).tolist())))
    return sorted(groups)


def make(X, y, loss, alpha=0.05, fit_intercept=True, sample_weight=None, l1_ratio=0.0):
    return build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=l1_ratio,
                         fit_intercept=fit_intercept, intercept_scaling=1.0,
                         sample_weight=sample_weight, loss_params={})


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_groups_are_the_identical_rows_with_different_targets(dense, dtype):
    rng = np.random.default_rng(0)
    X = planted(rng, dense=dense, dtype=dtype)
    y = np.ones(40)
    y[[5, 17, 22]] = -1.0          # groups 0, 1, 2 conflict; 8/30/31 keep +1 together
    expected = brute_groups(X, y)
    assert expected == [(0, 5, 9), (3, 17), (8, 22, 30, 31)]
    assert found_groups(make(X, y, "hinge")) == expected
    y_same = y.copy()               # no group's targets differ: nothing to step
    y_same[[0, 5, 9, 3, 17, 8, 22, 30, 31]] = -1.0
    assert brute_groups(X, y_same) == []
    assert found_groups(make(X, y_same, "hinge")) == []


def test_a_hash_collision_is_split_by_the_contents():
    """Rows whose hashes agree are compared entry by entry: forcing every hash equal still
    gives the exact groups."""
    rng = np.random.default_rng(1)
    X = planted(rng)
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    y[[0, 5]] = [1.0, -1.0]
    problem = make(X, y, "hinge")
    real = sdca._rows.row_hashes
    try:
        sdca._rows.row_hashes = lambda *args: np.zeros(args[3], dtype=np.uint64)
        assert found_groups(problem) == brute_groups(X, y)
        rows, labels = sdca.identical_rows(problem.X)   # (every row's hash the same)
    finally:
        sdca._rows.row_hashes = real
    # No group of one (a row that only shared its hash), the labels 0 .. G-1.
    assert np.array_equal(np.unique(labels), np.arange(3))
    assert sorted(np.bincount(labels).tolist()) == [2, 3, 4]


@pytest.mark.parametrize("dense", [False, True])
def test_the_identical_rows_are_found_once_per_x_for_sdca_and_the_gram_floor(dense,
                                                                              monkeypatch):
    """sdca.identical_rows: the groups of rows of equal contents, whatever the targets (brute
    force by the rows' bytes), hashed once per X and shared by SDCA's conflicting groups and
    solver="auto"'s Gram floor (which is 0 where two rows are equal)."""
    from fastdual.solvers import auto
    X = planted(np.random.default_rng(2), dense=dense)
    y = np.ones(40)
    y[[5, 17]] = -1.0
    problem = make(X, y, "squared_hinge")
    calls = []
    real = sdca._rows.row_hashes
    monkeypatch.setattr(sdca._rows, "row_hashes", lambda *args: calls.append(1) or real(*args))
    rows, labels = sdca.identical_rows(problem.X)
    got = sorted(tuple(sorted(rows[labels == g].tolist())) for g in np.unique(labels))
    contents = {}
    for i, row in enumerate(X.toarray() if sp.issparse(X) else X):
        contents.setdefault(row.tobytes(), []).append(i)
    assert got == sorted(tuple(g) for g in contents.values() if len(g) > 1) == [
        (0, 5, 9), (3, 17), (8, 22, 30, 31)]
    assert found_groups(problem) == [(0, 5, 9), (3, 17)]
    assert not rows.flags.writeable and not labels.flags.writeable
    if not dense:           # (dense rows are not hashed for the floor: they share columns)
        assert auto._equal_rows(problem.X, np.arange(40))
        assert not auto._equal_rows(problem.X, np.array([0, 3, 8, 1, 2]))
        assert auto._equal_rows(problem.X, np.array([1, 22, 2, 31]))
    assert calls == [1]
    import pickle
    again = pickle.loads(pickle.dumps(problem.X, protocol=2))   # (protocols < 5: writeable)
    rows, labels = sdca.identical_rows(again)
    assert not rows.flags.writeable and not labels.flags.writeable and calls == [1]


def dual_objective(problem, duals):
    v = problem.dual_vector(duals)
    return problem.primal_dual(v, duals)[1]


def random_duals(problem, rng):
    lower, upper = problem.loss.dual_bounds(problem.y)
    lo = np.maximum(lower, -3.0)
    hi = np.minimum(upper, 3.0)
    duals = lo + (hi - lo) * rng.random(problem.n_samples)
    if problem.loss_name == "logistic":     # inside the open domain
        duals = np.clip(duals, lower + 1e-3 * (upper - lower), upper - 1e-3 * (upper - lower))
    return duals


def step_groups(problem, duals, groups=None):
    v = problem.dual_vector(duals)
    groups = sdca.conflicting_groups(problem) if groups is None else groups
    data, indices, indptr = problem.X.kernel_args
    duals = duals.copy()
    moved, _ = _sdca.group_steps(data, indices, indptr, problem.n_samples, problem.n_features,
                              problem.bias, problem.y, problem.sample_weight,
                              problem.squared_norms(), duals, v, problem.loss, problem.l2,
                              *groups, sdca.run_weights(problem, *groups))
    return duals, v, moved, groups


def regression_or_labels(loss, rng, n):
    if loss == "squared":
        return rng.normal(size=n)
    return np.where(rng.random(n) < 0.5, 1.0, -1.0)


@pytest.mark.parametrize("loss", LOSSES)
def test_the_block_step_maximises_the_groups_dual(loss):
    """After one pass, each group's duals maximise the dual with all others fixed: no bounded
    quasi-Newton maximisation of the same objective over the group's duals does better."""
    rng = np.random.default_rng(2)
    X = planted(rng)
    X = X * 4.0                     # long rows: the curvature q of the block is large
    y = regression_or_labels(loss, rng, 40)
    for group in ((0, 5, 9), (3, 17), (8, 22, 30, 31)):
        if loss != "squared":
            y[group[0]], y[group[1]] = 1.0, -1.0
    weights = rng.uniform(0.5, 2.0, 40)
    problem = make(X, y, loss, sample_weight=weights)
    start = random_duals(problem, rng)
    group_ptr, run_ptr, members = sdca.conflicting_groups(problem)
    assert len(group_ptr) - 1 == 3
    lower, upper = problem.loss.dual_bounds(problem.y)
    for g in range(len(group_ptr) - 1):     # one group at a time: the others stay fixed
        runs = run_ptr[group_ptr[g]:group_ptr[g + 1] + 1]
        group = members[runs[0]:runs[-1]]
        duals, v, moved, _ = step_groups(problem, start,
                                         (np.array([0, runs.size - 1]), runs - runs[0], group))
        assert moved == 1
        # v is updated with the duals it is made of
        np.testing.assert_allclose(v, problem.dual_vector(duals), rtol=1e-10, atol=1e-12)
        D_step = dual_objective(problem, duals)
        assert D_step >= dual_objective(problem, start)
        margin = 1e-9 * (upper[group] - lower[group]) if loss == "logistic" else 0.0
        bounds = [(max(lo + m, -1e6), min(hi - m, 1e6))
                  for lo, hi, m in zip(lower[group], upper[group],
                                       np.broadcast_to(margin, group.shape))]

        def negative(values, group=group):
            trial = start.copy()
            trial[group] = values
            return -dual_objective(problem, trial)

        best = scipy.optimize.minimize(negative, start[group], method="L-BFGS-B",
                                       bounds=bounds, options=dict(ftol=1e-15, gtol=1e-12))
        assert -best.fun > dual_objective(problem, start)    # there was something to gain
        assert D_step >= -best.fun - 1e-9 * abs(D_step), (loss, g, D_step, -best.fun)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), loss=st.sampled_from(LOSSES),
       scale=st.floats(0.1, 30.0), intercept=st.booleans())
def test_the_block_step_never_lowers_the_dual(seed, loss, scale, intercept):
    rng = np.random.default_rng(seed)
    X = planted(rng, n=20, d=6, copies=((0, 1, 2), (4, 11)))
    X = X * scale
    y = regression_or_labels(loss, rng, 20)
    problem = make(X, y, loss, alpha=float(rng.choice([1e-4, 1e-2, 1.0])),
                   fit_intercept=intercept)
    start = random_duals(problem, rng)
    duals, v, _, _ = step_groups(problem, start)
    lower, upper = problem.loss.dual_bounds(problem.y)
    assert np.all((lower <= duals) & (duals <= upper))
    D0, D1 = dual_objective(problem, start), dual_objective(problem, duals)
    assert D1 >= D0 - 1e-12 * max(1.0, abs(D0))


def crossposted(seed=0, n=300, d=400, pairs=6):
    """Text-like rows of raw counts (long rows, norms in the tens) where a few rows appear
    twice with opposite labels, as cross-posted documents do in news20."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.08, random_state=rng, format="csr")
    X.data = np.ceil(X.data * 6.0)
    truth = rng.normal(size=d)
    y = np.where(X @ truth + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    dup = rng.choice(n, size=pairs, replace=False)
    X = sp.vstack([X, X[dup]]).tocsr()
    y = np.r_[y, -y[dup]]
    return X, y


def primal(X, y, coef, intercept, C, loss):
    z = y * (X @ coef + intercept)
    losses = np.maximum(0.0, 1.0 - z)
    losses = losses ** 2 if loss == "squared_hinge" else losses
    return 0.5 * (coef @ coef + intercept ** 2) + C * losses.sum()


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_crossposted_rows_converge_and_match_liblinear(loss):
    from sklearn.svm import LinearSVC
    X, y = crossposted()
    C = 1.0
    model = fastdual.train(X, y, loss=loss, C=C, solver="sdca", tol=1e-6, max_epochs=400,
                           fit_intercept=True, regularize_intercept=True, random_state=0)
    assert model.converged_, model.relative_gap_
    # LIBLINEAR's dual solver (scikit-learn) run long, on the same objective: its primal is
    # at least P*, which fastdual's certified gap bounds from below
    reference = LinearSVC(loss=loss, C=C, dual=True, tol=1e-10, max_iter=1_000_000,
                          intercept_scaling=1.0).fit(X, y)
    P_ref = primal(X, y, reference.coef_.ravel(), reference.intercept_[0], C, loss)
    P_fd = primal(X, y, model.coef_.ravel(), model.intercept_, C, loss)
    assert P_fd <= P_ref * (1 + 2e-6)
    # fastdual's objective is this one divided by C n
    assert model.primal_ == pytest.approx(P_fd / (C * X.shape[0]), rel=1e-9)


def test_without_the_block_steps_coordinate_steps_stall_there():
    """What the block steps are for: the same run with the groups hidden from the driver ends
    at max_epochs far from the certificate's tol (so the test above would fail without them)."""
    X, y = crossposted()
    real = sdca.conflicting_groups
    try:
        sdca.conflicting_groups = lambda *args: (np.zeros(1, np.intp), np.zeros(1, np.intp),
                                                 np.zeros(0, np.intp))
        with pytest.warns(fastdual.ConvergenceWarning):
            model = fastdual.train(X, y, loss="hinge", C=1.0, solver="sdca", tol=1e-6,
                                   max_epochs=400, fit_intercept=True,
                                   regularize_intercept=True, random_state=0)
    finally:
        sdca.conflicting_groups = real
    assert model.relative_gap_ > 1e-4


def test_no_groups_where_the_driver_cannot_step_them():
    """Block steps need w = v at the objective's l2: not with l1, not with a free intercept's
    centre, not in accelerated SDCA's subproblems; plain SDCA finds the six pairs."""
    X, y = crossposted()

    def driver(loss="hinge", l1_ratio=0.0, regularize_intercept=True, **options):
        problem = build_problem(X, y, loss=loss, alpha=1e-3, C=None, l1_ratio=l1_ratio,
                                fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                                loss_params={}, regularize_intercept=regularize_intercept)
        return SOLVERS["sdca"](problem, solver_options(SOLVERS["sdca"], options), 0)

    assert not driver(l1_ratio=0.5).blocks.search
    assert not driver(regularize_intercept=False).blocks.search
    assert not driver(loss="squared_hinge", acceleration=True).blocks.search
    plain = driver()
    assert plain.blocks.search and plain.blocks.groups is None
    plain.find_groups()
    group_ptr, run_ptr, members = plain.blocks.groups
    assert len(group_ptr) - 1 == 6 and len(run_ptr) - 1 == 12 and members.size == 12


# -- the k-class problems (Crammer-Singer, multinomial): vector duals ----------------------------

STRATEGIES = [("crammer_singer", "hinge"), ("multinomial", "logistic")]


def vector_problem(X, labels, strategy, loss, k, alpha=0.05, sample_weight=None):
    from fastdual._multiclass import build_vector_problem
    from fastdual._validation import check_matrix
    objective = dict(loss=loss, alpha=alpha, C=None, l1_ratio=0.0, fit_intercept=True,
                     intercept_scaling=1.0, sample_weight=sample_weight, loss_params={})
    return build_vector_problem(check_matrix(X), np.arange(k, dtype=float),
                                np.asarray(labels, dtype=np.intp), strategy, objective)


def random_vector_duals(problem, rng):
    """Feasible duals inside the domain: Crammer-Singer a_y = t, the others -t times a point
    of the simplex; multinomial a = e_y - p, p inside the simplex."""
    n, k = problem.n_samples, problem.n_classes
    duals = np.zeros((n, k))
    for i, y in enumerate(problem.labels):
        p = rng.dirichlet(np.ones(k))
        if problem.strategy == "crammer_singer":
            t = rng.uniform(0.05, 0.95)
            others = -t * rng.dirichlet(np.ones(k - 1))
            duals[i, np.arange(k) != y] = others
            duals[i, y] = -others.sum()
        else:
            duals[i] = -p
            duals[i, y] += 1.0
    return duals


def vector_dual(problem, duals):
    v = np.zeros((problem.n_features + 1, problem.n_classes))
    problem.dual_vector(duals, out=v)
    return problem.primal_dual(v, duals)[1]


def vector_step(problem, duals, groups, sweeps):
    from fastdual.solvers import _vector
    v = np.zeros((problem.n_features + 1, problem.n_classes))
    problem.dual_vector(duals, out=v)
    duals = duals.copy()
    largest = int(np.max(np.diff(groups[1][groups[0]])))
    moved, gain = _vector.vector_group_steps(
        *problem.X.kernel_args, problem.n_samples, problem.n_features, problem.bias,
        problem.labels, problem.sample_weight, problem.squared_norms(), duals, v,
        problem.vector_loss, problem.l2, *groups, np.zeros((8 + 2 * largest, problem.n_classes)),
        np.zeros(problem.n_classes, dtype=np.intp), sweeps)
    return duals, v, moved, gain


@pytest.mark.parametrize("strategy, loss", STRATEGIES)
def test_the_vector_block_step_maximises_the_groups_dual(strategy, loss):
    """Crammer-Singer and multinomial: after the block's sweeps each group's duals reach the
    maximum of the dual over them that scipy's SLSQP finds on the same domain, the others
    fixed; v is updated with the duals; the gain reported is the dual's."""
    rng = np.random.default_rng(3)
    k = 3
    X = planted(rng) * 4.0
    labels = rng.integers(0, k, 40)
    labels[[0, 5, 9]] = [0, 1, 2]
    labels[[3, 17]] = [1, 0]
    labels[[8, 22, 30, 31]] = [2, 2, 0, 1]
    problem = vector_problem(X, labels, strategy, loss, k,
                             sample_weight=rng.uniform(0.5, 2.0, 40))
    start = random_vector_duals(problem, rng)
    group_ptr, run_ptr, members = sdca.conflicting_groups(problem, problem.labels)
    assert len(group_ptr) - 1 == 3
    D0 = vector_dual(problem, start)
    for g in range(3):
        runs = run_ptr[group_ptr[g]:group_ptr[g + 1] + 1]
        group = members[runs[0]:runs[-1]]
        duals, v, moved, gain = vector_step(
            problem, start, (np.array([0, runs.size - 1]), runs - runs[0], group), 5000)
        assert moved == 1
        v_exact = np.zeros_like(v)
        problem.dual_vector(duals, out=v_exact)
        np.testing.assert_allclose(v, v_exact, rtol=1e-9, atol=1e-12)
        D1 = vector_dual(problem, duals)
        assert D1 - D0 == pytest.approx(gain, rel=1e-6, abs=1e-12)

        size = group.size
        free = [np.flatnonzero(np.arange(k) != problem.labels[j]) for j in group]

        def unpack(values, group=group, free=free):
            trial = start.copy()
            for p, j in enumerate(group):
                b = values[p * (k - 1):(p + 1) * (k - 1)]
                if strategy == "crammer_singer":     # b = -a_others >= 0, sum b <= 1
                    trial[j, free[p]] = -b
                    trial[j, problem.labels[j]] = b.sum()
                else:                                # b = p_others, sum <= 1
                    trial[j, free[p]] = -b
                    trial[j, problem.labels[j]] = b.sum()
            return trial

        def negative(values):
            return -vector_dual(problem, unpack(values))

        x0 = np.concatenate([-start[j, free[p]] for p, j in enumerate(group)])
        cons = [{"type": "ineq", "fun": (lambda values, p=p:
                                         1.0 - 1e-9 - values[p * (k - 1):(p + 1) * (k - 1)].sum())}
                for p in range(size)]
        best = scipy.optimize.minimize(negative, x0, method="SLSQP", constraints=cons,
                                       bounds=[(1e-12, 1.0)] * (size * (k - 1)),
                                       options=dict(ftol=1e-14, maxiter=2000))
        assert -best.fun > D0
        assert D1 >= -best.fun - 1e-7 * abs(D1), (strategy, g, D1, -best.fun)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), which=st.sampled_from(STRATEGIES),
       scale=st.floats(0.1, 30.0), sweeps=st.integers(1, 50))
def test_the_vector_block_step_never_lowers_the_dual(seed, which, scale, sweeps):
    strategy, loss = which
    rng = np.random.default_rng(seed)
    k = 4
    X = planted(rng, n=20, d=6, copies=((0, 1, 2), (4, 11))) * scale
    labels = rng.integers(0, k, 20)
    labels[[0, 1]] = [0, 3]
    labels[[4, 11]] = [2, 1]
    problem = vector_problem(X, labels, strategy, loss, k,
                             alpha=float(rng.choice([1e-4, 1e-2, 1.0])))
    start = random_vector_duals(problem, rng)
    groups = sdca.conflicting_groups(problem, problem.labels)
    duals, _, _, gain = vector_step(problem, start, groups, sweeps)
    assert gain >= 0.0
    D0, D1 = vector_dual(problem, start), vector_dual(problem, duals)
    assert np.isfinite(D1)
    assert D1 >= D0 - 1e-12 * max(1.0, abs(D0))


def crossposted_classes(seed=0, n=300, d=400, k=4, copies=8):
    """Text-like counts in k classes, a few rows copied into another class."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.08, random_state=rng, format="csr")
    X.data = np.ceil(X.data * 6.0)
    y = np.asarray((X @ rng.normal(size=(d, k))).argmax(axis=1)).ravel()
    dup = rng.choice(n, size=copies, replace=False)
    X = sp.vstack([X, X[dup]]).tocsr()
    y = np.r_[y, (y[dup] + 1 + rng.integers(0, k - 1, copies)) % k]
    return X, y.astype(float)


@pytest.mark.parametrize("multiclass", ["crammer_singer", "multinomial"])
def test_crossposted_rows_converge_in_the_k_class_problems(multiclass):
    X, y = crossposted_classes()
    loss = "hinge" if multiclass == "crammer_singer" else "logistic"
    common = dict(loss=loss, multiclass=multiclass, C=1.0, tol=1e-6, max_epochs=600,
                  random_state=0)
    model = fastdual.train(X, y, **common)
    assert model.converged_, model.relative_gap_
    real = sdca.conflicting_groups
    try:
        sdca.conflicting_groups = lambda *args: (np.zeros(1, np.intp), np.zeros(1, np.intp),
                                                 np.zeros(0, np.intp))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
            plain = fastdual.train(X, y, **common)
    finally:
        sdca.conflicting_groups = real
    # the same optimum: plain SDCA's certified bounds contain the block-stepped primal
    assert model.primal_ <= plain.primal_ + 1e-12
    assert model.primal_ >= plain.dual_ - 1e-12
    if multiclass == "crammer_singer":     # where coordinate steps alone crawl
        assert not plain.converged_


def test_the_group_schedule_searches_once_then_backs_off_while_the_groups_do_not_pay():
    """Both SDCA drivers' schedule (sdca.GroupSchedule): no search before GROUP_SEARCH_EPOCH
    or where the driver cannot step groups; a pass every `base` epochs; each check where the
    passes made less than GROUP_SHARE of the dual's progress doubles the interval, up to
    GROUP_EVERY_MAX; a check where they made more brings it back to `base`."""
    assert not sdca.GroupSchedule(False).checked(0.0)
    schedule = sdca.GroupSchedule(True)
    for _ in range(sdca.GROUP_SEARCH_EPOCH - 1):
        assert not schedule.due()
    assert not schedule.checked(0.0)
    assert not schedule.due() and schedule.checked(0.0)
    schedule.found(("groups",), 3)
    assert not schedule.search and not schedule.checked(0.0)     # the first check: a start
    runs = [schedule.due() for _ in range(9)]
    assert runs == [True, False, False] * 3             # epochs 9 .. 17: every third
    everies, dual = [], 0.0
    for _ in range(8):
        dual += 1.0
        schedule.gain = 0.5 * sdca.GROUP_SHARE       # less than its share of 1.0
        schedule.checked(dual)
        everies.append(schedule.every)
    assert everies == [6, 12, 24, 48] + [sdca.GROUP_EVERY_MAX] * 4
    schedule.gain = 2 * sdca.GROUP_SHARE
    schedule.checked(dual + 1.0)
    assert schedule.every == 3
