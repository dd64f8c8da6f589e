"""Equivalences: sparse == dense, float32 ~ float64, weights == repeated rows, C <-> alpha,
intercept == an explicit constant column, reproducibility, options reaching the same optimum,
warm starts, save/load."""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import BINARY_LOSSES, REGRESSION_LOSSES, binary_problem, np_objective, problem_for

ALL = BINARY_LOSSES + REGRESSION_LOSSES


@pytest.mark.parametrize("loss", ALL)
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_sparse_equals_dense(loss, l1_ratio):
    X, y = problem_for(loss, n=70, d=6, seed=1, sparse=True, density=0.6)
    # Few epochs: once the gap reaches rounding level the dual objective is flat to eps and
    # alpha is only determined to sqrt(eps), so iterates are compared before that.
    kwargs = dict(loss=loss, alpha=0.03, l1_ratio=l1_ratio, tol=0.0, max_epochs=6, random_state=4)
    m_sparse = fastdual.train(X, y, solver="sdca", **kwargs)
    m_dense = fastdual.train(X.toarray(), y, solver="sdca", **kwargs)
    # Same seed, same steps: only the summation order of dot products differs.
    np.testing.assert_allclose(m_sparse.coef_, m_dense.coef_, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(m_sparse.dual_coef_, m_dense.dual_coef_, rtol=1e-9, atol=1e-11)
    assert m_sparse.gap_ == pytest.approx(m_dense.gap_, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared"])
def test_float32_close_to_float64(sparse, loss):
    X, y = problem_for(loss, n=90, d=7, seed=2, sparse=sparse)
    X32 = X.astype(np.float32)
    m64 = fastdual.train(X, y, loss=loss, alpha=0.01, tol=1e-8, max_epochs=5000, random_state=0)
    m32 = fastdual.train(X32, y, loss=loss, alpha=0.01, tol=1e-8, max_epochs=5000, random_state=0)
    assert m32.converged_
    np.testing.assert_allclose(m32.coef_, m64.coef_, rtol=1e-4, atol=1e-5)


def test_float32_input_is_not_copied():
    """The kernels read float32 CSR and C-ordered dense arrays in place."""
    from fastdual._validation import check_matrix
    X, _ = binary_problem(n=20, d=4, seed=0, sparse=True, dtype=np.float32)
    assert np.shares_memory(check_matrix(X).data, X.data)
    dense = np.ascontiguousarray(X.toarray())
    assert np.shares_memory(check_matrix(dense).data, dense)


@pytest.mark.parametrize("loss", ["smooth_hinge", "squared", "hinge"])
@pytest.mark.parametrize("by", ["alpha", "C"])
def test_integer_weights_equal_repeated_rows(loss, by):
    X, y = problem_for(loss, n=40, d=5, seed=6)
    weights = np.random.default_rng(0).integers(0, 4, size=40)
    weights[0] = 2
    rows = np.repeat(np.arange(40), weights)
    strength = {"alpha": 0.05} if by == "alpha" else {"C": 0.3}
    kwargs = dict(loss=loss, tol=1e-11, max_epochs=50_000, random_state=0, **strength)
    weighted = fastdual.train(X, y, sample_weight=weights, **kwargs)
    repeated = fastdual.train(X[rows], y[rows], **kwargs)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-5, atol=1e-6)
    assert weighted.intercept_ == pytest.approx(repeated.intercept_, rel=1e-5, abs=1e-6)
    assert weighted.primal_ == pytest.approx(repeated.primal_, rel=1e-8)


def test_C_and_alpha_give_the_same_model():
    X, y = binary_problem(n=60, d=5, seed=3)
    C = 2.5
    by_c = fastdual.train(X, y, C=C, tol=1e-6, random_state=7)
    by_alpha = fastdual.train(X, y, alpha=1.0 / (C * X.shape[0]), tol=1e-6, random_state=7)
    np.testing.assert_allclose(by_c.coef_, by_alpha.coef_, rtol=1e-12)
    assert by_c.alpha == pytest.approx(1.0 / (C * 60))


def test_intercept_equals_an_explicit_constant_column():
    X, y = binary_problem(n=60, d=5, seed=3)
    scaling = 3.0
    with_b = fastdual.train(X, y, alpha=0.02, intercept_scaling=scaling, tol=0.0, max_epochs=20,
                            random_state=1)
    column = fastdual.train(np.hstack([X, np.full((60, 1), scaling)]), y, alpha=0.02,
                            fit_intercept=False, tol=0.0, max_epochs=20, random_state=1)
    np.testing.assert_allclose(with_b.coef_, column.coef_[:5], rtol=1e-10, atol=1e-12)
    assert with_b.intercept_ == pytest.approx(column.coef_[5] * scaling, rel=1e-10)
    assert with_b.intercept_mode == "regularized"


def test_same_seed_same_model_bit_for_bit():
    X, y = binary_problem(n=50, d=4, seed=8, sparse=True)
    first = fastdual.train(X, y, solver="sdca", tol=0.0, max_epochs=7, random_state=123)
    second = fastdual.train(X, y, solver="sdca", tol=0.0, max_epochs=7, random_state=123)
    other = fastdual.train(X, y, solver="sdca", tol=0.0, max_epochs=7, random_state=124)
    assert np.array_equal(first.coef_, second.coef_)
    assert not np.array_equal(first.coef_, other.coef_)


@pytest.mark.parametrize("options", [dict(sdca_option="IV"), dict(sampling="uniform"),
                                     dict(output="average"), dict(sdca_option="IV", output="average")])
@pytest.mark.parametrize("loss", ["smooth_hinge", "hinge", "logistic"])
def test_every_option_reaches_the_optimum(options, loss):
    X, y = binary_problem(n=60, d=5, seed=12)
    reference = fastdual.train(X, y, loss=loss, alpha=0.05, tol=1e-10, max_epochs=50_000,
                               random_state=0)
    model = fastdual.train(X, y, loss=loss, alpha=0.05, tol=1e-4, max_epochs=50_000,
                           random_state=0, **options)
    assert model.converged_
    assert model.primal_ - reference.dual_ <= model.gap_ + 1e-12
    assert model.primal_ == pytest.approx(reference.primal_, rel=2e-4)


def test_averaging_checks_at_powers_of_two():
    X, y = binary_problem(n=40, d=4, seed=1)
    model = fastdual.train(X, y, tol=0.0, max_epochs=10, output="average", random_state=0)
    assert [h["epoch"] for h in model.history_] == [1, 2, 4, 8, 10]


def test_warm_start_from_a_converged_model_needs_one_epoch():
    X, y = binary_problem(n=80, d=5, seed=13)
    cold = fastdual.train(X, y, solver="sdca", loss="logistic", alpha=0.01, tol=1e-8, random_state=0,
                          check_every=1)
    warm = fastdual.train(X, y, solver="sdca", loss="logistic", alpha=0.01, tol=1e-8, random_state=1,
                          warm_start=cold, check_every=1)
    assert cold.n_epochs_ > 5 and warm.n_epochs_ == 1
    # From a model without usable duals (other rows), the duals come from its margins.
    partial = fastdual.train(X[:60], y[:60], solver="sdca", loss="logistic", alpha=0.01, tol=1e-8, random_state=0)
    warm2 = fastdual.train(X, y, solver="sdca", loss="logistic", alpha=0.01, tol=1e-8, random_state=1,
                           warm_start=partial, check_every=1)
    assert warm2.converged_
    assert warm2.history_[0]["gap"] < cold.history_[0]["gap"]


def test_callback_sees_every_check_and_can_stop():
    X, y = binary_problem(n=50, d=4, seed=15)
    seen = []
    model = fastdual.train(X, y, alpha=1e-3, tol=1e-12, random_state=0, check_every=1,
                           solver="sdca",
                           callback=lambda info: seen.append(info) or (info["epoch"] < 4))
    assert [s["epoch"] for s in seen] == [1, 2, 3, 4] and model.n_epochs_ == 4
    assert set(seen[0]) == {"epoch", "seconds", "primal", "dual", "gap", "nnz"}


def test_unconverged_run_warns_with_the_gap(recwarn):
    X, y = binary_problem(n=50, d=4, seed=16)
    with pytest.warns(fastdual.ConvergenceWarning, match=r"relative duality gap .* > tol"):
        model = fastdual.train(X, y, loss="hinge", alpha=1e-5, tol=1e-12, max_epochs=2)
    assert not model.converged_


def test_verbose_prints_one_line_per_check(capsys):
    X, y = binary_problem(n=50, d=4, seed=16)
    model = fastdual.train(X, y, tol=0.0, max_epochs=3, verbose=1, random_state=0,
                           check_every=1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split()[:4] == ["epoch", "primal", "dual", "gap"]
    # (and a line per switch of solver="auto": here SDCA's first epochs hand over to Newton)
    checks = [line for line in lines[1:] if not line.startswith("switch at epoch")]
    assert len(lines) - 1 - len(checks) == len(model.switches_)
    assert [int(line.split()[0]) for line in checks] == [h["epoch"] for h in model.history_]


@pytest.mark.parametrize("loss", ["logistic", "squared", "smooth_hinge"])
def test_save_load_predicts_identically(tmp_path, loss):
    X, y = problem_for(loss, n=60, d=5, seed=17)
    if loss != "squared":
        y = np.where(y > 0, "spam", "ham")
    model = fastdual.train(X, y, loss=loss, alpha=0.01, random_state=0)
    path = tmp_path / "model.fd"
    model.save(path)
    assert path.exists()          # the name given, no suffix added
    loaded = fastdual.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    for attribute in ("gap_", "primal_", "dual_", "converged_", "n_epochs_", "history_", "loss",
                      "alpha", "l1_ratio", "intercept_mode", "loss_params"):
        assert getattr(loaded, attribute) == getattr(model, attribute)
    np.testing.assert_array_equal(loaded.dual_coef_, model.dual_coef_)
    if loss == "logistic":
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_load_refuses_other_files(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, coef=np.zeros(3))
    with pytest.raises(ValueError, match="not a fastdual model"):
        fastdual.load(bad)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, metadata=np.array([{"format": "x"}], dtype=object))
    with pytest.raises(ValueError):
        fastdual.load(pickled)


def test_predictions_and_probabilities():
    X, y = binary_problem(n=200, d=5, seed=18, noise=0.0)
    labels = np.where(y > 0, 7, 3)
    model = fastdual.train(X, labels, loss="logistic", C=10.0, random_state=0)
    assert list(model.classes_) == [3, 7]
    assert np.mean(model.predict(X) == labels) > 0.95
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(np.where(proba[:, 1] > 0.5, 7, 3), model.predict(X))
    hinge = fastdual.train(X, labels, loss="hinge", random_state=0)
    with pytest.raises(AttributeError, match="logistic"):
        hinge.predict_proba(X)
    regression = fastdual.train(X, X @ np.arange(5.0), loss="squared", alpha=1e-5, tol=1e-4,
                                max_epochs=10_000, random_state=0)
    assert regression.classes_ is None and regression.converged_
    np.testing.assert_allclose(regression.predict(X), X @ np.arange(5.0), atol=1e-2)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "smooth_hinge", "absolute",
                                  "epsilon_insensitive"])
def test_shrinking_reaches_the_same_optimum(loss):
    X, y = problem_for(loss, n=300, d=6, seed=19, sparse=True)
    kwargs = dict(loss=loss, alpha=1e-3, tol=1e-6, max_epochs=100_000, random_state=0)
    on = fastdual.train(X, y, shrinking=True, **kwargs)
    off = fastdual.train(X, y, shrinking=False, **kwargs)
    assert on.converged_ and off.converged_
    # (P_on - D_off <= gap_on + gap_off, each computed value within its summation's rounding:
    # both runs certify gaps of about 1e-17 here)
    assert on.primal_ - off.dual_ <= on.gap_ + off.gap_ + 1e-14 * abs(on.primal_)
    assert on.primal_ == pytest.approx(off.primal_, rel=2e-6)


def test_the_kernel_shrinks_bounded_duals_and_never_lowers_the_dual():
    """One epoch with a zero threshold: every sample whose step cannot move leaves the set."""
    from fastdual.solvers import _sdca
    from fastdual._problem import build_problem
    X, y = binary_problem(n=200, d=5, seed=20, noise=0.0)
    p = build_problem(X, y, loss="hinge", alpha=1e-2, C=None, l1_ratio=0.0, fit_intercept=False,
                      intercept_scaling=1.0, sample_weight=None, loss_params={})
    n, d = X.shape
    duals_, v = np.zeros(n), np.zeros(d + 1)
    order = np.arange(n, dtype=np.intp)
    state = np.random.SeedSequence(0).generate_state(4, dtype=np.uint64)
    sq = p.squared_norms()
    data, indices, indptr = p.X.kernel_args
    n_active = n
    duals = []
    for epoch in range(6):
        _, _, n_active = _sdca.sdca_epoch(data, indices, indptr, n, d, 0.0, p.y, p.sample_weight, sq,
                                       duals_, v, v, p.loss, p.l2, 0.0, 1, 0.0, False, order, state,
                                       n_active, *((0.0, 0.0) if epoch else (np.inf, np.inf)),
                                       np.empty(0),
                                       np.empty(0, dtype=np.intp))
        duals.append(p.primal_dual(v, duals_)[1])
        assert sorted(order) == list(range(n))                  # still a permutation
    assert 0 < n_active < n
    # Shrunk samples sit on a bound of beta = alpha y in [0, 1], pushed outward when they left:
    # beta = 0 with margin > 1 or beta = 1 with margin < 1 (w has moved a little since).
    shrunk = order[n_active:]
    beta = duals_[shrunk] * p.y[shrunk]
    margins = p.y[shrunk] * (X[shrunk] @ v[:d])
    assert np.all((beta == 0.0) | (beta == 1.0))
    outward = np.where(beta == 0.0, margins > 1.0, margins < 1.0)
    assert outward.mean() > 0.9
    assert np.all(np.diff(duals) >= -1e-12)


def test_check_every():
    X, y = binary_problem(n=60, d=4, seed=21)
    model = fastdual.train(X, y, solver="sdca", tol=0.0, max_epochs=10, check_every=3, random_state=0)
    assert [h["epoch"] for h in model.history_] == [3, 6, 9, 10]
    model = fastdual.train(X, y, solver="sdca", tol=0.0, max_epochs=10, check_every="auto", random_state=0)
    assert [h["epoch"] for h in model.history_] == [10]
    every = fastdual.train(X, y, solver="sdca", loss="hinge", alpha=1e-3, tol=1e-6, random_state=0, check_every=1)
    auto = fastdual.train(X, y, solver="sdca", loss="hinge", alpha=1e-3, tol=1e-6, random_state=0,
                          check_every="auto")
    assert auto.converged_ and auto.relative_gap_ <= 1e-6
    assert len(auto.history_) < len(every.history_)
    assert auto.n_epochs_ >= every.n_epochs_
    for bad in (0, -2, 1.5, "sometimes", True):
        with pytest.raises(ValueError, match="check_every must be a positive integer or 'auto'"):
            fastdual.train(X, y, solver="sdca", check_every=bad)


def test_the_adaptive_schedule_extrapolates_the_rate_and_never_warns():
    from fastdual._loop import CheckSchedule
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # A digit every 10 epochs, 1e-2 at epoch 11: tol 10^-10.5 is 85 epochs away; the
        # schedule skips to 70% of that (59.5, rounded down), within twice the previous
        # interval (here 100).
        schedule = CheckSchedule("auto", 10 ** -10.5, 10**6)
        schedule.checked(1, 1e-1)
        schedule.interval = 100
        schedule.checked(11, 1e-2)
        assert schedule.next_check == 11 + 59
        # A gap that falls by a relative 1e-14 over 2000 epochs: no rate to extrapolate (its
        # 2000th root is 1 in floating point); the interval doubles.
        schedule = CheckSchedule("auto", 1e-10, 10**6)
        schedule.checked(1, 0.5)
        schedule.interval = 2000
        schedule.checked(2001, 0.5 * (1 - 1e-14))
        assert schedule.next_check == 2001 + 4000
        # tol 1.7 epochs away at the last interval's rate (3.4e-2 at epoch 2, 1.4e-3 at 4, tol
        # 1e-4): not the next epoch (70% of 1.7 rounds down to 1) but the one after; tol half
        # an epoch away: the next.
        schedule = CheckSchedule("auto", 1e-4, 10**6)
        schedule.checked(2, 3.42e-2)
        schedule.interval = 2
        schedule.checked(4, 1.41e-3)
        assert schedule.next_check == 6
        schedule = CheckSchedule("auto", 1e-4, 10**6)
        schedule.checked(1, 1e-1)
        schedule.checked(2, 1e-3)
        assert schedule.next_check == 3
        # A gap that does not fall: the next epoch is checked ...
        schedule.checked(6001, 0.6)
        assert schedule.next_check == 6002
        # ... but for a driver whose gap spikes above a falling trend (SDCA), far from tol (the
        # smallest gap so far, 1e-3, above NEAR_TOL tol), the last two checks' spacing is kept.
        schedule.checked(12001, 0.7, keep_spacing=True)
        assert schedule.next_check == 12001 + 6000
        # ... and near tol (2.5e-4 seen) the next epoch is checked again.
        schedule = CheckSchedule("auto", 1e-4, 10**6)
        schedule.checked(1, 1e-1, True)
        schedule.checked(3, 2.5e-4, True)
        schedule.checked(9, 3e-4, True)
        assert schedule.next_check == 10
        # Extremes: gaps and tol far apart, an infinite gap first.
        for tol, gaps in ((1e-300, [1.0, 1e-290]), (5e-324, [1e300, 1e-300]),
                          (1e-10, [np.inf, 0.5, 0.25])):
            schedule = CheckSchedule("auto", tol, 10**6)
            for epoch, gap in enumerate(gaps, start=1):
                schedule.checked(epoch, gap)
                assert epoch < schedule.next_check <= epoch + 2 * 2 ** epoch


def test_a_gap_that_does_not_fall_far_from_tol_keeps_the_spacing_of_its_checks():
    """Far from tol (the smallest gap so far above NEAR_TOL times tol) a check whose gap did
    not fall keeps the spacing that led to it, so that the spikes of a primal that is not
    monotone (SDCA's w(alpha) on the hinge loss) do not bring the checks back to every epoch;
    near tol, where a bounce may land below it, every epoch the driver's work allows is checked
    as before."""
    from fastdual._loop import NEAR_TOL, CheckSchedule
    from fastdual.solvers import cd, newton, rda, sdca, spdc
    schedule = CheckSchedule("auto", 1e-4, 10**6)
    schedule.checked(1, 1e-1, True)
    schedule.checked(3, 1e-2, True)      # falls: extrapolated (70% of 2 epochs, at least 2)
    assert schedule.next_check == 5
    schedule.checked(11, 2e-2, True)     # rose, checked 8 epochs on (the driver's work): 8
    assert schedule.next_check == 19
    schedule.checked(19, 2e-2, True)     # level: 8 again
    assert schedule.next_check == 27
    schedule.checked(27, 1.9e-2, True)   # falls slowly: tol ~800 epochs away, interval doubles
    assert schedule.next_check == 27 + 16
    near = CheckSchedule("auto", 1e-4, 10**6)
    near.checked(1, 1e-1, True)
    near.checked(3, 0.9 * NEAR_TOL * 1e-4, True)
    near.checked(11, 2e-2, True)          # rose, but a gap within NEAR_TOL tol was seen
    assert near.next_check == 12
    # SDCA's gaps spike above a falling trend; the stochastic primal methods' hover, and reach
    # tol by checking often (SPDC's weighted mini-batch hinge in test_spdc: 2,046 checks to its
    # certificate at 17,094 epochs; keeping the spacing there found none within 20,000).
    assert sdca.SDCA.keeps_check_spacing
    for driver in (spdc.SPDC, rda.RDA, cd.CD, newton.Newton):
        assert not getattr(driver, "keeps_check_spacing", False)


def test_the_loop_tells_the_schedule_which_drivers_keep_their_spacing(monkeypatch):
    """The loop passes the running driver's keeps_check_spacing to the schedule at each check:
    SDCA's (also under solver="auto"'s switching driver), not SPDC's or Newton's."""
    from fastdual import _loop
    seen = []
    original = _loop.CheckSchedule.checked

    def checked(self, epoch, rel_gap, keep_spacing=False):
        seen.append(keep_spacing)
        return original(self, epoch, rel_gap, keep_spacing)

    monkeypatch.setattr(_loop.CheckSchedule, "checked", checked)
    X, y = problem_for("hinge", n=200, d=10, seed=1)
    for solver, expected in (("sdca", True), ("spdc", False), ("auto", True)):
        seen.clear()
        fastdual.train(X, y, loss="hinge", alpha=1e-2, solver=solver, tol=1e-4,
                       max_epochs=2000, random_state=0)
        assert seen and set(seen) == {expected}, solver
    seen.clear()
    fastdual.train(X, y, loss="logistic", alpha=1e-2, solver="newton", tol=1e-8,
                   random_state=0)
    assert seen and set(seen) == {False}


@pytest.mark.slow
def test_a_spiking_hinge_run_keeps_the_spacing_of_its_checks(data_dir):
    """The same in a whole run: SDCA on the hinge loss over w8a (unit rows, alpha 1e-6), whose
    certified gap spikes (to 0.97 in its first 500 epochs) while its trend falls. After a check
    whose gap rose, with the smallest so far above NEAR_TOL tol, the next check comes no sooner
    than the spacing that led to it (before: at the next epoch the driver's work allowed, 465
    checks in 2,356 epochs; now about 20)."""
    import io
    import lzma
    from fastdual._loop import NEAR_TOL
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(io.BytesIO(lzma.open(f"{data_dir}/w8a.xz").read()))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-300)) @ X)
    tol = 1e-4
    checks = []
    model = fastdual.train(X, y, loss="hinge", alpha=1e-6, tol=tol, max_epochs=5000,
                           random_state=0,
                           callback=lambda info: checks.append((info["epoch"], info["gap"]
                                                                / info["primal"])))
    assert model.converged_
    rose = [k for k in range(1, len(checks) - 1) if checks[k][1] >= checks[k - 1][1]
            and min(g for _, g in checks[:k + 1]) > NEAR_TOL * tol]
    assert rose                                          # the case spikes
    for k in rose:
        assert checks[k + 1][0] - checks[k][0] >= checks[k][0] - checks[k - 1][0]
    assert len(checks) < 100


def test_training_runs_with_one_blas_thread_and_restores_the_count():
    """The drivers' vector operations never depend on the machine's BLAS threads (the same bits
    everywhere); the caller's setting is back afterwards."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return {info["num_threads"] for info in threadpoolctl.threadpool_info()
                if info["user_api"] == "blas"}

    X, y = problem_for("logistic", n=300, d=40, seed=4)
    seen = []
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        for solver in ("newton", "agm", "sdca"):
            fastdual.train(X, y, loss="logistic", alpha=1e-3, solver=solver, check_every=1,
                           callback=lambda info: seen.append(blas_threads()) or True)
        fastdual.train(X, np.arange(300) % 3, loss="logistic", multiclass="ovr", n_jobs=2,
                       alpha=1e-3, callback=lambda info: seen.append(blas_threads()) or True)
        after = blas_threads()
    assert seen and all(threads == {1} for threads in seen)
    assert before == after


@pytest.mark.parametrize("kernel", ["sequential", "parallel"])
def test_the_kernel_shrinks_each_bound_by_its_own_threshold(kernel):
    """LIBLINEAR's two thresholds for the hinge (PGmax against beta = 0, PGmin against
    beta = 1, beta = a y): with only the lower bound's at zero, the samples that leave are all
    at beta = 0 pushed below it, and with only the upper bound's, all at beta = 1 pushed above;
    both kinds exist. Labels of both signs, so that up and down are beta's, not a's."""
    from fastdual.solvers import _sdca, _sdca_parallel
    from fastdual._problem import build_problem
    X, y = binary_problem(n=300, d=5, seed=21, noise=0.3)
    p = build_problem(X, y, loss="hinge", alpha=1e-3, C=None, l1_ratio=0.0, fit_intercept=False,
                      intercept_scaling=1.0, sample_weight=None, loss_params={})
    n, d = X.shape
    sq = p.squared_norms()
    data, indices, indptr = p.X.kernel_args
    duals_, v = np.zeros(n), np.zeros(d + 1)
    order = np.arange(n, dtype=np.intp)
    state = np.random.SeedSequence(0).generate_state(4, dtype=np.uint64)

    def epoch(duals_, v, order, state, n_active, up, down):
        args = (data, indices, indptr, n, d, 0.0, p.y, p.sample_weight, sq, duals_, v, v,
                p.loss, p.l2, 0.0, 1, 0.0)
        if kernel == "parallel":
            return _sdca_parallel.sdca_parallel_epoch(*args, order, state, n_active, up, down,
                                                      2, 4, np.empty(n, dtype=np.intp))
        return _sdca.sdca_epoch(*args, False, order, state, n_active, up, down, np.empty(0),
                                np.empty(0, dtype=np.intp))

    for _ in range(20):
        epoch(duals_, v, order, state, n, np.inf, np.inf)
    for up, down, bound in ((np.inf, 0.0, 0.0), (0.0, np.inf, 1.0)):
        a, vv, o, s = duals_.copy(), v.copy(), order.copy(), state.copy()
        _, _, n_active = epoch(a, vv, o, s, n, up, down)
        shrunk = o[n_active:]
        assert sorted(o) == list(range(n))
        assert shrunk.size > 0 and set(p.y[shrunk]) == {-1.0, 1.0}
        np.testing.assert_array_equal(a[shrunk] * p.y[shrunk], bound)
        # pushed outward at the point they left (w moved a little since): below 0 means a
        # margin above 1, above 1 a margin below 1
        margins = p.y[shrunk] * (X[shrunk] @ vv[:d])
        outward = margins > 1.0 if bound == 0.0 else margins < 1.0
        assert outward.mean() > 0.9


def test_a_blas_library_loaded_after_the_first_training_is_limited_too(tmp_path):
    """single_thread_blas covers the BLAS libraries loaded since its first use (scipy.linalg's
    OpenBLAS beside numpy's): in a fresh process, train, then load scipy.linalg, then train
    under a limit of 2 and look at every BLAS library's threads during the epochs."""
    pytest.importorskip("threadpoolctl")
    code = textwrap.dedent("""
        import json, numpy as np, threadpoolctl, fastdual
        X = np.random.default_rng(0).standard_normal((200, 20))
        y = np.where(X[:, 0] > 0, 1.0, -1.0)
        fastdual.train(X, y, loss="logistic", alpha=1e-3, solver="sdca")
        import scipy.linalg
        scipy.linalg.cho_factor(np.eye(3))
        seen = []
        with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
            fastdual.train(X, y, loss="logistic", alpha=1e-3, solver="newton", check_every=1,
                           callback=lambda info: seen.append(sorted(
                               {i["num_threads"] for i in threadpoolctl.threadpool_info()
                                if i["user_api"] == "blas"})) or True)
        print(json.dumps(seen))
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, OPENBLAS_NUM_THREADS="2",
                                   OMP_NUM_THREADS="2"), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen and all(threads == [1] for threads in seen)
