"""solver="auto"'s stall switch (fastdual.solvers.switching): a first method that stalls hands
over to another, warm-started, within the same budget; the switch is recorded and printed; the
certificate is the shared one of exactly the returned model; a method that converges is never
switched. And accelerated SDCA's cheaper dual scaling search keeps its model."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import fastdual
from fastdual._problem import build_problem
from fastdual.solvers import auto, sdca, switching
from conftest import problem_for


def text_like(n, d, nnz, sigma, seed):
    """Sparse rows with Zipf-distributed columns, lengths lognormal(0, sigma): rows as raw text
    gives them, of very different norms."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), nnz)
    cols = np.minimum(rng.zipf(1.3, n * nnz) - 1, d - 1)
    X = sp.csr_matrix((rng.random(n * nnz), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return sp.csr_matrix(sp.diags(rng.lognormal(0.0, sigma, n)) @ X), y


def certify(X, y, model, **objective):
    return fastdual.duality_gap(X, y, model.coef_, model.intercept_,
                                dual_coef=model.dual_coef_, **objective)


def test_a_stalling_first_method_hands_over_and_the_run_converges(monkeypatch):
    # Squared loss on wide raw rows: auto's rule picks Newton, whose certificate (duals from
    # its margins) stops shrinking; SDCA from the last certified point converges.
    from fastdual.solvers.newton import Newton
    known = []          # (Newton's passes, the gap it knew without a certificate)
    known_gap = Newton.known_gap

    def recorded(self):
        gap = known_gap(self)
        if gap is not None:
            known.append((self.reported, gap))
        return gap

    monkeypatch.setattr(Newton, "known_gap", recorded)
    X, y = text_like(200, 2000, 20, 3.0, seed=0)
    # (Without an intercept. With LIBLINEAR's, Newton's known gaps fall slowly from any of
    # SDCA's starts, and whether and when the stall test switches depends on that start: a
    # slow method is not a stalled one by this test; docs/solvers/auto.md, "The stall
    # switch".)
    objective = dict(loss="squared", C=10.0)
    run = dict(tol=1e-6, max_epochs=3000, random_state=0, fit_intercept=False)
    with pytest.warns(fastdual.ConvergenceWarning):
        alone = fastdual.train(X, y, solver="newton", **objective, **run)
    assert not alone.converged_                     # the first method alone does not make it
    model = fastdual.train(X, y, **objective, **run)
    assert model.converged_ and model.relative_gap_ <= 1e-6
    assert model.solver == "sdca"
    # (the rows spread more than ROW_SPREAD: SDCA's first epochs come before Newton)
    handover, switch = model.switches_
    assert (handover["from"], handover["to"], handover["epoch"]) == ("sdca", "newton",
                                                                    auto.WARMUP_EPOCHS)
    assert (switch["from"], switch["to"], switch["solver"]) == ("newton", "sdca", "sdca")
    start = handover["epoch"]
    assert switching.MIN_PASSES <= switch["epoch"] - start
    assert switch["epoch"] < model.n_epochs_ <= run["max_epochs"]
    epochs = [h["epoch"] for h in model.history_]
    assert switch["epoch"] in epochs
    # the switch was made on a certified point of Newton, as the stall test defines it: on
    # the gaps certified, and between checks those Newton knew without a certificate
    before = [h for h in model.history_ if start < h["epoch"] <= switch["epoch"]]
    assert switch["relative_gap"] == pytest.approx(before[-1]["gap"] / before[-1]["primal"])
    # (Newton knows its gaps: the test by windows, the best of the latter half of the passes
    # against the best of the quarter before)
    seen = [(h["epoch"] - start, h["gap"] / h["primal"]) for h in before] + known
    passes = switch["epoch"] - start
    assert known and max(done for done, _ in known) <= passes
    earlier = [gap for done, gap in seen if passes // 4 < done <= passes // 2]
    later = [gap for done, gap in seen if passes // 2 < done <= passes]
    assert min(later) > switching.STALL_FACTOR * min(earlier)
    # the certificate is the shared one of exactly the returned coefficients and duals
    cert = fastdual.duality_gap(X, y, model.coef_, None, dual_coef=model.dual_coef_,
                                **objective)
    assert (cert.gap, cert.primal, cert.dual) == (model.gap_, model.primal_, model.dual_)
    # and the optimum is the one SDCA alone reaches (an independent run, tighter tol)
    reference = fastdual.train(X, y, solver="sdca", tol=1e-9, max_epochs=20_000,
                               random_state=1, fit_intercept=False, **objective)
    assert model.primal_ == pytest.approx(reference.primal_, rel=2e-6)


def test_the_switch_is_printed_and_saved(tmp_path, capsys):
    X, y = text_like(200, 2000, 20, 3.0, seed=0)
    model = fastdual.train(X, y, loss="squared", C=10.0, tol=1e-6, max_epochs=3000,
                           random_state=0, verbose=1, fit_intercept=False)
    out = capsys.readouterr().out
    handover, switch = model.switches_
    assert (f"switch at epoch {handover['epoch']}: sdca handed over after "
            f"{auto.WARMUP_EPOCHS} passes") in out
    assert f"switch at epoch {switch['epoch']}: newton stalled" in out
    assert "continuing with sdca" in out
    path = tmp_path / "m.npz"
    model.save(path)
    assert fastdual.load(path).switches_ == model.switches_


def test_no_switch_when_the_first_method_converges():
    # Dense, well scaled rows: Newton (rule 4) and SDCA (rule 5) converge by themselves, and the
    # model is the named solver's, bit for bit.
    X, y = problem_for("logistic", n=300, d=8, seed=5)
    for alpha in (1e-1, 1e-6):
        model = fastdual.train(X, y, loss="logistic", alpha=alpha, tol=1e-10,
                               max_epochs=10_000, random_state=0)
        assert model.converged_ and model.switches_ == []
        named = fastdual.train(X, y, loss="logistic", alpha=alpha, tol=1e-10,
                               max_epochs=10_000, random_state=0, solver=model.solver)
        assert np.array_equal(model.coef_, named.coef_) and model.gap_ == named.gap_


def test_the_fallbacks():
    X, y = problem_for("logistic", n=40, d=120, seed=1)
    from fastdual._problem import build_problem

    def problem(loss, l1_ratio=0.0, free=False):
        return build_problem(X, y, loss=loss, alpha=1e-6, C=None, l1_ratio=l1_ratio,
                             fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                             loss_params={}, regularize_intercept=not free)

    assert auto.fallback(problem("logistic"), "sdca", {"acceleration": True}) == ("sdca", {})
    assert auto.fallback(problem("logistic"), "newton", {}) == ("sdca", {})
    assert auto.fallback(problem("logistic", 0.5, free=True), "newton", {}) is None
    assert auto.fallback(problem("logistic"), "sdca", {}) == ("newton", {})
    # wide hinge-type: no Newton; accelerated SDCA at kappa >= 100 on rows of similar lengths
    assert auto.fallback(problem("squared_hinge"), "sdca", {}) == ("sdca", {"acceleration": True})
    assert auto.fallback(problem("squared_hinge", free=True), "sdca", {}) is None
    assert auto.fallback(problem("hinge"), "sdca", {}) is None             # not smooth
    assert auto.fallback(problem("logistic"), "newton", {"max_cg": 5}) is None
    # solver options given with "auto": no switch
    assert auto.plan(problem("logistic"), {"max_cg": 5}, fastdual.SOLVERS) == \
        [("newton", {"max_cg": 5})]


@pytest.mark.filterwarnings("ignore::fastdual.ConvergenceWarning")     # 40 epochs each
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), loss=st.sampled_from(["logistic", "squared_hinge",
                                                           "squared"]),
       wide=st.booleans(), log_alpha=st.floats(-7.0, 0.0))
def test_the_certificate_holds_across_a_forced_switch(seed, loss, wide, log_alpha):
    """With the stall test made to fire at every check, whatever auto switches to, the model's
    primal_, dual_, gap_ are the shared certificate of its coef_, intercept_, dual_coef_."""
    n, d = (30, 80) if wide else (80, 6)
    X, y = problem_for(loss, n=n, d=d, seed=seed)
    alpha = 10.0 ** log_alpha
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(switching, "MIN_PASSES", 1)
        patch.setattr(switching, "STALL_FACTOR", 0.0)
        model = fastdual.train(X, y, loss=loss, alpha=alpha, tol=1e-12, max_epochs=40,
                               random_state=seed, check_every=1)
    plan = auto.plan(model_problem(X, y, loss, alpha), {}, fastdual.SOLVERS)
    switched = [s["solver"] for s in model.switches_]
    # (a first method that reaches a zero gap at its first checks never stalls)
    assert switched in ([], [plan[1][0]] if len(plan) > 1 else [])
    assert model.solver == (switched[-1] if switched else plan[0][0])
    cert = certify(X, y, model, loss=loss, alpha=alpha)
    assert (cert.gap, cert.primal, cert.dual) == (model.gap_, model.primal_, model.dual_)


def model_problem(X, y, loss, alpha):
    from fastdual._problem import build_problem
    return build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=0.0,
                         fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                         loss_params={})


def golden_scale(problem, duals, v):
    """The scaling search as it was: the same golden section, the penalty summed over every
    entry of v at each value (the reference the cheaper search must agree with)."""
    c, y, loss = problem.sample_weight, problem.y, problem.loss
    kept = c > 0.0
    c, y, duals = c[kept], y[kept], duals[kept]
    n, l2, kappa = problem.n_samples, problem.l2, problem.l1 / problem.l2
    magnitude = np.abs(v)

    def value(s):
        excess = np.maximum(s * magnitude - kappa, 0.0)
        return (float(c @ loss.dual_values(y, s * duals)) / n
                - 0.5 * l2 * float(excess @ excess))

    return sdca.golden_section_max(value)


def test_the_golden_section_finds_a_concave_maximum_and_keeps_the_ends():
    for peak in (0.0, 1e-3, 0.37, 0.999, 1.0):
        s, value = sdca.golden_section_max(lambda t: -(t - peak) ** 2)
        assert abs(s - peak) < 1e-9 and value == -(s - peak) ** 2
    # a maximum beyond an end of [0, 1] is at that end, exactly
    assert sdca.golden_section_max(lambda t: t)[0] == 1.0
    assert sdca.golden_section_max(lambda t: -t)[0] == 0.0


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), kappa=st.sampled_from([0.0, 0.01, 0.3, 2.0]),
       s=st.floats(0.0, 1.0))
def test_the_scaled_penalty_is_the_sum_over_every_entry(seed, kappa, s):
    v = np.random.default_rng(seed).standard_normal(500) * 3.0
    expected = float(np.sum(np.maximum(s * np.abs(v) - kappa, 0.0) ** 2))
    assert sdca.scaled_penalty(v, kappa)(s) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.filterwarnings("ignore::fastdual.ConvergenceWarning")     # 200 epochs each
@pytest.mark.parametrize("l1_ratio", [0.0, 0.3])
@pytest.mark.parametrize("loss", ["squared_hinge", "logistic"])
def test_accelerated_sdca_keeps_its_model_with_the_cheaper_scaling(loss, l1_ratio):
    rng = np.random.default_rng(0)
    X = sp.random(300, 2000, density=0.01, random_state=1, format="csr")
    X = sp.csr_matrix(sp.diags(rng.lognormal(0, 1.0, 300)) @ X)
    y = np.where(rng.standard_normal(300) > 0, 1.0, -1.0)
    run = dict(loss=loss, alpha=1e-5, l1_ratio=l1_ratio, solver="sdca", acceleration=True,
               tol=1e-6, max_epochs=200, random_state=0, check_every=1)
    model = fastdual.train(X, y, **run)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sdca, "best_dual_scale", golden_scale)
        before = fastdual.train(X, y, **run)
    # The iterates do not depend on the scaling (it only shortens the duals reported): the
    # coefficients and every primal value are the same bits; the dual values agree to
    # rounding, the scaled duals to the flatness of the dual along the ray.
    assert np.array_equal(model.coef_, before.coef_)
    assert [h["primal"] for h in model.history_] == [h["primal"] for h in before.history_]
    for new, old in zip(model.history_, before.history_):
        assert new["dual"] == pytest.approx(old["dual"], rel=1e-12)
    assert model.gap_ == pytest.approx(before.gap_, rel=1e-12)
    assert np.allclose(model.dual_coef_, before.dual_coef_, rtol=1e-6, atol=0)


@pytest.mark.parametrize("after", [1, 3, 8])
def test_ctrl_c_after_a_switch_names_the_method_of_the_model_returned(after):
    """After Ctrl-C the model is the best certified checkpoint, which may be older than the
    switch: its solver and switches_ are those of that checkpoint."""
    X, y = text_like(200, 2000, 20, 3.0, seed=0)
    objective = dict(loss="squared", C=10.0, fit_intercept=False)
    full = fastdual.train(X, y, tol=1e-6, max_epochs=3000, random_state=0, **objective)
    handover, switch = full.switches_
    checks_after = []

    def interrupt(info):
        if info["epoch"] > switch["epoch"]:
            checks_after.append(info["epoch"])
            if len(checks_after) == after:
                raise KeyboardInterrupt

    with pytest.raises(fastdual.TrainingInterrupted) as caught:
        fastdual.train(X, y, tol=1e-6, max_epochs=3000, random_state=0, callback=interrupt,
                       **objective)
    model = caught.value.model
    seen = model.history_
    checked = [h for h in full.history_ if h["epoch"] <= checks_after[-1]]
    best = min(checked, key=lambda h: h["gap"] / abs(h["primal"]))
    assert model.n_epochs_ == best["epoch"] and model.gap_ == best["gap"]
    if best["epoch"] > switch["epoch"]:
        assert model.solver == "sdca" and model.switches_ == [handover, switch]
    elif best["epoch"] > handover["epoch"]:
        assert model.solver == "newton" and model.switches_ == [handover]
    else:
        assert model.solver == "sdca" and model.switches_ == []
    assert len(seen) == len([h for h in checked if h["epoch"] <= best["epoch"]])
    cert = fastdual.duality_gap(X, y, model.coef_, None, dual_coef=model.dual_coef_,
                                loss="squared", C=10.0)
    assert (cert.gap, cert.primal, cert.dual) == (model.gap_, model.primal_, model.dual_)


def test_wide_hinge_type_problems_go_on_accelerated_only_on_rows_of_similar_lengths():
    """Rule 4 starts wide hinge-type problems with plain SDCA; it goes on accelerated when it
    stalls from kappa >= ACCELERATION_KAPPA only when the rows' c_i ||x_i||^2 spread at most
    ROW_SPREAD times their mean, and takes Newton corrections when they spread more."""
    from fastdual._problem import build_problem
    X, y = problem_for("squared_hinge", n=40, d=120, seed=1)
    lengths = np.ones(X.shape[0])
    lengths[0] = 100.0                 # one long row: the largest squared norm ~40 x the mean
    for rows, spread_ok in ((X, True), (X * lengths[:, None], False)):
        sizes = np.sum(rows ** 2, axis=1) + 1.0                # the intercept feature's 1
        r2 = sizes.max()
        for kappa, accelerated in ((50.0, False), (5000.0, spread_ok)):
            alpha = r2 / (0.5 * kappa * rows.shape[0])           # gamma = 1/2
            p = build_problem(rows, y, loss="squared_hinge", alpha=alpha, C=None,
                              l1_ratio=0.0, fit_intercept=True, intercept_scaling=1.0,
                              sample_weight=None, loss_params={})
            assert auto.condition_number(p) == pytest.approx(kappa, rel=1e-12)
            assert auto.row_spread(p) == pytest.approx(r2 / sizes.mean(), rel=1e-12)
            assert (auto.row_spread(p) <= auto.ROW_SPREAD) == spread_ok
            assert auto.rule(p) == ("sdca", {}, 4)
            correction = switching.Correction("newton", {"max_cg": auto.CORRECTION_MAX_CG},
                                              auto.CORRECTION_STEPS)
            assert auto.plan(p, {}, fastdual.SOLVERS)[1:] == (
                [("sdca", {"acceleration": True})] if accelerated
                else [] if spread_ok else [correction])


def test_a_free_intercept_on_wide_hinge_type_data_trains_with_plain_sdca():
    """Accelerated SDCA takes no free intercept: rule 4 never goes on accelerated there (auto
    had raised SDCA's ValueError)."""
    X, y = problem_for("squared_hinge", n=40, d=120, seed=1)
    model = fastdual.train(X, y, loss="squared_hinge", alpha=1e-7, regularize_intercept=False,
                           tol=1e-6, max_epochs=5000, random_state=0)
    assert model.solver == "sdca" and model.intercept_mode == "free" and model.converged_
    cert = certify(X, y, model, loss="squared_hinge", alpha=1e-7, regularize_intercept=False)
    assert (cert.gap, cert.primal, cert.dual) == (model.gap_, model.primal_, model.dual_)


def test_newton_starts_from_sdcas_first_epochs_on_rows_of_very_different_lengths():
    """Where rule 4 picks Newton-CG (l2, the intercept regularised, too many features for the
    direct solve) on rows whose c_i ||x_i||^2 spread more than ROW_SPREAD times their mean,
    plain SDCA's first WARMUP_EPOCHS epochs come first and Newton starts from their w; on rows
    of similar lengths, or where Newton's steps are direct solves, Newton starts from zero."""
    from fastdual._problem import build_problem
    from fastdual.solvers import newton
    narrow = problem_for("logistic", n=60, d=8, seed=2)
    cg = problem_for("logistic", n=400, d=300, seed=2, sparse=True, density=1.0)
    for (X, y), direct in ((narrow, True), (cg, False)):
        lengths = np.ones(X.shape[0])
        lengths[0] = 100.0
        scaled = sp.diags(lengths) @ X if sp.issparse(X) else X * lengths[:, None]
        for rows, spread in ((X, False), (scaled, True)):
            for free in (False, True):
                p = build_problem(rows, y, loss="logistic", alpha=1e-7, C=None, l1_ratio=0.0,
                                  fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                                  loss_params={}, regularize_intercept=not free)
                assert auto.rule(p)[0] == "newton"
                assert (auto.row_spread(p) > auto.ROW_SPREAD) == spread
                assert newton.direct_pays(p) == direct
                plan = auto.plan(p, {}, fastdual.SOLVERS)
                if spread and not free and not direct:
                    assert plan == [("sdca", {}),
                                    switching.Handover("newton", {}, auto.WARMUP_EPOCHS),
                                    ("sdca", {})]
                else:
                    assert plan == [("newton", {}), ("sdca", {})]
    # trained (Newton-CG's data): the handover at WARMUP_EPOCHS, Newton from SDCA's w, the
    # shared certificate
    raw = scaled
    model = fastdual.train(raw, y, loss="logistic", alpha=1e-7, tol=1e-8, max_epochs=2000,
                           random_state=0)
    assert model.converged_ and model.solver == "newton"
    assert model.switches_[0]["epoch"] == auto.WARMUP_EPOCHS
    assert model.switches_[0]["reason"].startswith("handed over")
    cert = certify(raw, y, model, loss="logistic", alpha=1e-7)
    assert (cert.gap, cert.primal, cert.dual) == (model.gap_, model.primal_, model.dual_)
    alone = fastdual.train(raw, y, loss="logistic", alpha=1e-7, tol=1e-10, max_epochs=5000,
                           solver="newton")
    rounding = 1e-12 * abs(alone.primal_)
    assert alone.dual_ - rounding <= model.primal_ <= alone.primal_ + model.gap_ + rounding


class KnowsItsGap:
    """A method that never asks for a certificate (may_reach False) but knows its point's
    relative gap, which falls by `rate` per epoch of four passes."""
    name = "newton"

    def __init__(self, rate, flat_after=None):
        self.rate, self.gap, self.passes, self.flat_after = rate, 1.0, 0, flat_after

    def epoch(self):
        self.passes += 4
        if self.flat_after is None or self.passes <= self.flat_after:
            self.gap *= self.rate
        return 4

    def may_reach(self, tol):
        return False

    def known_gap(self):
        return self.gap


@pytest.mark.parametrize("rate, flat_after", [(1.0, None), (0.99, None), (0.5, None),
                                              (0.5, 100)])
def test_the_stall_test_reads_the_gap_a_method_knows_where_it_is_not_certified(rate,
                                                                             flat_after):
    """Switching asks for a check (to switch from) exactly when the gaps the running method
    knows without a certificate show the stall the certified ones would, tested at each
    doubling of the passes from MIN_PASSES: not before MIN_PASSES, never for a gap that halves
    over the latter half of the passes, and for a gap flat from pass 100, at 256 (at 128 the
    best gap of the first 64 passes is far above it; every iteration's test would fire at
    200)."""
    X, y = problem_for("logistic", n=50, d=5, seed=0)
    problem = build_problem(
        X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=0.0, fit_intercept=True,
        intercept_scaling=1.0, sample_weight=None, loss_params={})
    driver = switching.Switching(problem, KnowsItsGap(rate, flat_after), ("newton", {}),
                                 [("sdca", {})], seed=0)
    asked = None
    for epoch in range(1, 100):
        driver.epoch()
        if driver.may_reach(1e-6):
            asked = 4 * epoch
            break
    # rate 1: no progress; 0.99: 8 epochs (32 passes) lower the gap by 8 %, not half
    expected = {1.0: switching.MIN_PASSES, 0.99: switching.MIN_PASSES,
                0.5: None if flat_after is None else 4 * switching.MIN_PASSES}[rate]
    assert asked == expected
    # a method that knows no gap is certified on the schedule
    unknowing = KnowsItsGap(1.0)
    unknowing.known_gap = lambda: None
    driver = switching.Switching(problem, unknowing, ("newton", {}), [("sdca", {})], seed=0)
    driver.epoch()
    assert driver.may_reach(1e-6) is True


@pytest.mark.parametrize("knows_gap", [False, True])
def test_after_a_switch_only_a_method_that_knows_no_gap_is_checked_at_doubling_passes(knows_gap):
    """After a switch the new method is checked at 1, 2, 4, ... of its passes, so that its rate
    is measured; a method that knows its gap without a certificate (Newton, l2 alone) is not:
    its may_reach, asked at every epoch once the schedule is due, takes their place."""
    X, y = problem_for("logistic", n=50, d=5, seed=0)
    problem = build_problem(
        X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=0.0, fit_intercept=True,
        intercept_scaling=1.0, sample_weight=None, loss_params={})
    method = KnowsItsGap(0.5)
    method.knows_gap = knows_gap
    method.check_due = lambda epoch: None
    driver = switching.Switching(problem, method, ("newton", {}), [("sdca", {})], seed=0)
    driver._restart_counts()                 # as after a switch: the forced checks start
    forced = [epoch for epoch in range(1, 20) if driver.check_due(epoch)]
    assert forced == ([] if knows_gap else [1, 2, 4, 8, 16])


def test_an_early_small_known_gap_does_not_veto_the_progress_after_it():
    """The stall test on known gaps compares windows (the latter half of the passes against
    the quarter before), not the best gap of the whole first half: Newton's first iterate can
    know a gap far below its next ones' (w8a's smoothed hinge at alpha 1e-8: 1.3e5, then 6.9e7
    falling), and a run that then falls steadily is not a stall."""
    X, y = problem_for("logistic", n=50, d=5, seed=0)
    problem = build_problem(
        X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=0.0, fit_intercept=True,
        intercept_scaling=1.0, sample_weight=None, loss_params={})
    method = KnowsItsGap(0.8)
    gaps = iter([1.0] + [1000.0 * 0.8 ** k for k in range(200)])
    method.known_gap = lambda: next(gaps)
    driver = switching.Switching(problem, method, ("newton", {}), [("sdca", {})], seed=0)
    asked = [4 * epoch for epoch in range(1, 60) if (driver.epoch(), driver.may_reach(1e-6))[1]]
    # (the best of the first half, 1.0 at pass 4, would have called pass 64 a stall: no gap
    # up to it is below half of that)
    assert asked == []
    assert min(1000.0 * 0.8 ** k for k in range(16)) > switching.STALL_FACTOR * 1.0
