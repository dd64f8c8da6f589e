"""solver="auto" (the default): each documented rule picks its solver, the model records the
solver that ran, an explicit solver or solver options win, and the certificate is that of the
returned model."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import problem_for, scattered_rows
from fastdual._problem import build_problem
from fastdual.solvers import auto, takes_warm_start
from fastdual.solvers.switching import Handover


def problem(X, y, loss, alpha, l1_ratio=0.0, regularize_intercept=True):
    return build_problem(X, y, loss=loss, alpha=alpha, C=None, l1_ratio=l1_ratio,
                         fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                         loss_params={}, regularize_intercept=regularize_intercept)


def test_the_condition_number_is_r2_over_gamma_l2_n():
    X, y = problem_for("logistic", n=50, d=4, seed=0)
    p = problem(X, y, "logistic", 1e-3, l1_ratio=0.5)
    r2 = np.max(np.sum(X ** 2, axis=1) + 1.0)                  # the intercept feature's 1
    assert auto.condition_number(p) == pytest.approx(r2 / (4.0 * 0.5e-3 * 50), rel=1e-12)
    assert auto.condition_number(problem(X, y, "hinge", 1e-3)) == np.inf


def alpha_for(kappa, X, loss_gamma):
    """The alpha at which an l2 problem on X has the given condition number."""
    r2 = np.max(np.asarray((X.multiply(X) if sp.issparse(X) else X ** 2).sum(axis=1))) + 1.0
    return r2 / (loss_gamma * kappa * X.shape[0])


CASES = [  # (loss, kappa, l1_ratio, free intercept, shape, the documented choice, rule)
    # shape: False narrow (120 x 6, Newton's direct solve pays), True wide (40 x 120),
    # "repeated" wide with each of 20 rows twice (40 x 120: linearly dependent rows),
    # "many" (30 x 2500: too many features for the direct solve)
    ("logistic", 0.5, 0.0, False, False, ("sdca", {}), 5),
    ("logistic", 2.0, 0.0, False, False, ("newton", {}), 4),
    ("logistic", 2.0, 0.0, False, "many", ("sdca", {}), 5),
    ("squared", 0.2, 0.0, False, False, ("newton", {}), 4),
    ("squared", 0.2, 0.0, False, "many", ("sdca", {}), 5),
    ("squared_epsilon_insensitive", 2.0, 0.0, False, False, ("newton", {}), 4),
    ("squared_hinge", 2.0, 0.0, False, False, ("sdca", {}), 5),
    ("smooth_hinge", 2.0, 0.0, False, False, ("sdca", {}), 5),
    ("squared_hinge", 6.0, 0.0, False, False, ("newton", {}), 4),
    ("smooth_hinge", 6.0, 0.0, False, False, ("newton", {}), 4),
    ("logistic", 50.0, 0.0, False, False, ("newton", {}), 4),
    ("squared", 50.0, 0.0, False, False, ("newton", {}), 4),
    ("smooth_hinge", 50.0, 0.0, False, True, ("sdca", {}), 4),
    ("squared_hinge", 5000.0, 0.0, False, True, ("sdca", {}), 4),
    ("squared_hinge", 50.0, 0.0, False, False, ("newton", {}), 4),
    ("logistic", 50.0, 0.0, False, True, ("sdca", {}), 4),     # random rows: nearly orthogonal
    ("squared", 50.0, 0.0, False, True, ("sdca", {}), 4),
    ("logistic", 50.0, 0.0, False, "repeated", ("newton", {}), 4),   # every row twice
    ("squared", 50.0, 0.0, False, "repeated", ("newton", {}), 4),
    ("hinge", 50.0, 0.0, False, False, ("sdca", {}), 3),
    ("epsilon_insensitive", 50.0, 0.0, False, False, ("sdca", {}), 3),
    ("logistic", 50.0, 0.5, False, False, ("cd", {}), 1),
    ("squared_hinge", 50.0, 0.9, False, True, ("cd", {}), 1),
    ("logistic", 2.0, 0.5, False, False, ("sdca", {}), 5),
    ("logistic", 50.0, 1.0, False, False, ("cd", {}), 1),
    ("squared", 2.0, 1.0, False, True, ("cd", {}), 1),
    ("logistic", 50.0, 0.0, True, False, ("newton", {}), 4),
    ("logistic", 2.0, 0.0, True, False, ("newton", {}), 4),
    ("logistic", 0.5, 0.0, True, False, ("sdca", {}), 5),
    ("hinge", 50.0, 0.0, True, False, ("sdca", {}), 3),
    ("logistic", 50.0, 0.5, True, False, ("cd", {}), 1),
    ("logistic", 2.0, 0.5, True, False, ("newton", {}), 2),
    ("hinge", 50.0, 0.5, True, False, ("rda", {}), 2),
    ("logistic", 50.0, 1.0, True, False, ("cd", {}), 1),
    ("hinge", 50.0, 1.0, False, False, ("sdca", {}), 3),
]


@pytest.mark.parametrize("loss,kappa,l1_ratio,free,wide,choice,number", CASES)
def test_each_rule_picks_its_solver(loss, kappa, l1_ratio, free, wide, choice, number):
    n, d = (30, 2500) if wide == "many" else (40, 120) if wide else (120, 6)
    X, y = problem_for(loss, n=n, d=d, seed=1)
    if wide == "repeated":
        X, y = np.vstack([X[:20], X[:20]]), np.concatenate([y[:20], y[:20]])
    gamma = {"logistic": 4.0, "squared": 1.0, "smooth_hinge": 1.0,
             "squared_hinge": 0.5}.get(loss, 1.0)
    alpha = alpha_for(kappa, X, gamma) / (1.0 - l1_ratio if l1_ratio < 1 else 1.0)
    p = problem(X, y, loss, alpha, l1_ratio, regularize_intercept=not free)
    assert auto.rule(p) == (*choice, number)
    model = fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio, max_epochs=3,
                           regularize_intercept=not free, random_state=0, tol=0.0)
    assert model.solver == choice[0]
    stages = auto.plan(p, {}, fastdual.SOLVERS)
    if stages[0] != choice:
        # SDCA's first epochs before Newton (its first model flat: the smoothed hinge), then
        # the choice: not the bits of naming it (test_a_flat_start_takes_sdcas_first_epochs)
        assert stages[:2] == [("sdca", {}), Handover(choice[0], {}, auto.FLAT_START_EPOCHS)]
        return
    named = fastdual.train(X, y, loss=loss, alpha=alpha, l1_ratio=l1_ratio, max_epochs=3,
                           regularize_intercept=not free, random_state=0, tol=0.0,
                           solver=choice[0], **choice[1])
    # The choice is applied as documented: the same bits as naming it.
    assert np.array_equal(model.coef_, named.coef_) and model.gap_ == named.gap_


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "smooth_hinge", "logistic", "squared",
                                  "absolute", "epsilon_insensitive"])
def test_whether_the_choice_takes_a_warm_start_does_not_depend_on_the_strength(loss):
    """fastdual.regularization_path reads it from the previous model's solver."""
    X, y = problem_for(loss, n=40, d=5, seed=4)
    for l1_ratio in (0.0, 0.5, 1.0):
        for free in (False, True):
            takes = {takes_warm_start(auto.choose(problem(X, y, loss, 10.0 ** e, l1_ratio,
                                                          regularize_intercept=not free),
                                                  {}, fastdual.SOLVERS)[0])
                     for e in range(-8, 3)}
            assert len(takes) == 1, (l1_ratio, free)


@pytest.mark.filterwarnings("ignore::fastdual.ConvergenceWarning")   # two epochs each
def test_an_explicit_solver_or_options_win():
    X, y = problem_for("logistic", n=120, d=6, seed=2)
    alpha = alpha_for(50.0, X, 4.0)                        # the Newton rule's regime
    assert fastdual.train(X, y, loss="logistic", alpha=alpha, solver="spdc",
                          max_epochs=2).solver == "spdc"
    assert fastdual.train(X, y, loss="logistic", alpha=alpha, acceleration=True,
                          max_epochs=2).solver == "sdca"
    assert fastdual.train(X, y, loss="logistic", alpha=alpha, max_cg=3,
                          max_epochs=2).solver == "newton"
    assert fastdual.train(X, y, loss="logistic", alpha=alpha, batch_size=2,
                          max_epochs=2).solver == "spdc"
    with pytest.raises(ValueError, match="no solver takes the options"):
        fastdual.train(X, y, loss="logistic", alpha=alpha, batch_size=2, max_cg=3)


def test_auto_models_are_certified_and_reach_the_optimum():
    """Whatever auto picks, the certificate is the shared one of the returned model, and the
    objective matches a solver named explicitly to tight tolerance."""
    for loss, kappa in (("logistic", 2.0), ("logistic", 50.0), ("hinge", 50.0)):
        X, y = problem_for(loss, n=120, d=6, seed=3)
        alpha = alpha_for(kappa, X, 4.0 if loss == "logistic" else 1.0)
        model = fastdual.train(X, y, loss=loss, alpha=alpha, tol=1e-9, max_epochs=100_000)
        cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss=loss,
                                    alpha=alpha, dual_coef=model.dual_coef_)
        assert cert.gap == model.gap_ and model.converged_
        reference = fastdual.train(X, y, loss=loss, alpha=alpha, tol=1e-10, solver="sdca",
                                   max_epochs=100_000)
        assert model.primal_ == pytest.approx(reference.primal_, rel=1e-8)


def test_multiclass_and_the_estimators_use_auto():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((150, 3)) + np.repeat(np.eye(3) * 3, 50, axis=0)
    y = np.repeat([0, 1, 2], 50)
    joint = fastdual.train(X, y, loss="logistic", alpha=1e-2)
    assert joint.multiclass == "multinomial" and joint.solver == "sdca"
    alpha = alpha_for(50.0, X, 1.0)
    ovr = fastdual.train(X, y, loss="squared_hinge", alpha=alpha)
    assert ovr.multiclass == "ovr" and ovr.solver == "newton"
    from fastdual.sklearn import LinearClassifier
    assert LinearClassifier().solver == "auto"
    assert LinearClassifier(loss="squared_hinge", alpha=alpha).fit(X, y).model_.solver == "newton"


@pytest.mark.parametrize("loss,params,flat", [
    ("smooth_hinge", {}, True), ("smooth_hinge", {"gamma": 0.5}, True),
    ("smooth_hinge", {"gamma": 2.0}, False), ("squared_hinge", {}, False),
    ("logistic", {}, False), ("squared", {}, False)])
def test_a_flat_start_is_where_no_margin_has_curvature_at_zero(loss, params, flat):
    """flat_start: Newton's model at w = 0 is the l2 penalty alone, for the smoothed hinge with
    gamma <= 1 (1 - yz = 1 at the end of its quadratic stretch or past it), not with gamma > 1
    (1 < gamma: on the stretch) nor for the losses curved at 0."""
    X, y = problem_for(loss, n=50, d=4, seed=0)
    p = build_problem(X, y, loss=loss, alpha=1e-3, C=None, l1_ratio=0.0, fit_intercept=True,
                      intercept_scaling=1.0, sample_weight=None, loss_params=params)
    assert auto.flat_start(p) is flat


def test_a_flat_start_takes_sdcas_first_epochs():
    """Where the rule picks Newton and its first model is flat (the smoothed hinge), auto runs
    SDCA's first FLAT_START_EPOCHS epochs and hands over to Newton (SDCA behind it as its stall
    fallback); the switch is recorded, the run converges, and its certificate is the shared
    one of exactly the returned model, at SDCA's optimum. Not for the squared hinge."""
    X, y = problem_for("smooth_hinge", n=400, d=10, seed=3)
    alpha = alpha_for(50.0, X, 1.0)
    p = problem(X, y, "smooth_hinge", alpha)
    assert auto.rule(p)[0] == "newton"
    assert auto.plan(p, {}, fastdual.SOLVERS) == [
        ("sdca", {}), Handover("newton", {}, auto.FLAT_START_EPOCHS), ("sdca", {})]
    model = fastdual.train(X, y, loss="smooth_hinge", alpha=alpha, tol=1e-8, random_state=0)
    assert model.converged_ and model.solver == "newton"
    [handover] = model.switches_
    assert (handover["from"], handover["to"], handover["epoch"]) == (
        "sdca", "newton", auto.FLAT_START_EPOCHS)
    assert handover["reason"].startswith("handed over")
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, dual_coef=model.dual_coef_,
                                loss="smooth_hinge", alpha=alpha)
    assert (cert.gap, cert.primal, cert.dual) == (model.gap_, model.primal_, model.dual_)
    reference = fastdual.train(X, y, loss="smooth_hinge", alpha=alpha, solver="sdca",
                               tol=1e-11, max_epochs=50_000, random_state=1)
    assert model.primal_ == pytest.approx(reference.primal_, rel=1e-7)
    squared = problem(X, y, "squared_hinge", alpha_for(50.0, X, 0.5))
    assert auto.plan(squared, {}, fastdual.SOLVERS)[0] == ("newton", {})


def normalised_gram_lowest(X, bias):
    """The smallest eigenvalue of the Gram matrix of X's nonzero rows with the intercept
    feature appended, scaled to a unit diagonal, by NumPy over all the rows."""
    rows = np.hstack([np.asarray(X.todense() if sp.issparse(X) else X, dtype=np.float64),
                      np.full((X.shape[0], 1), bias)])
    rows = rows[np.linalg.norm(rows, axis=1) > 0]
    rows /= np.linalg.norm(rows, axis=1)[:, None]
    return np.linalg.eigvalsh(rows @ rows.T)[0]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_gram_floor_of_few_rows_is_their_smallest_eigenvalue(sparse, dtype, fit_intercept):
    # Few rows (16, all sampled: 16 <= sqrt(16 * 16)): the exact eigenvalue, the row of zero
    # norm left out without an intercept.
    X, y = problem_for("logistic", n=16, d=30, seed=3, sparse=sparse, dtype=dtype)
    X = X.tolil() if sparse else X.copy()
    X[7] = 0.0
    X = X.tocsr() if sparse else X
    p = build_problem(X, y, loss="logistic", alpha=1e-3, C=None, l1_ratio=0.0,
                      fit_intercept=fit_intercept, intercept_scaling=1.0, sample_weight=None,
                      loss_params={})
    expected = normalised_gram_lowest(X, 1.0 if fit_intercept else 0.0)
    assert 0.05 < expected < 0.9
    tol = 1e-5 if dtype == np.float32 else 1e-10
    assert auto.gram_floor(p) == pytest.approx(expected, abs=tol)


def test_the_gram_floor_of_many_sparse_rows_follows_their_spectrum():
    # 1,500 sparse rows, of which the estimate samples sqrt(16 * 1500) = 154: near the smallest
    # eigenvalue over all of them (NumPy's), with and without an intercept (which halves it:
    # every row shares the intercept feature). Rare features (each in about 3 rows) make the
    # independent columns' edge a little low here (0.81 times the truth).
    X, y = scattered_rows(1500, 20_000, 40, seed=4)
    for fit_intercept in (False, True):
        p = build_problem(X, y, loss="logistic", alpha=1e-6, C=None, l1_ratio=0.0,
                          fit_intercept=fit_intercept, intercept_scaling=1.0,
                          sample_weight=None, loss_params={})
        expected = normalised_gram_lowest(X, 1.0 if fit_intercept else 0.0)
        assert 0.05 < expected
        assert expected / 1.3 <= auto.gram_floor(p) <= expected * 1.2


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_gram_floor_of_many_rows_is_their_spectrums_edge(fit_intercept, monkeypatch):
    # 1,500 unit Gaussian rows in 3,000 dimensions: the smallest eigenvalue over all of them is
    # near the random matrix's edge (1 - sqrt(1/2))^2 = 0.086 (half that with an intercept of
    # the rows' length), a sample of 400 rows' near (1 - sqrt(400 / 3000))^2 = 0.40: more than
    # 2.5 times the truth. The estimate (the sample: sqrt(64 * 1500) = 309 rows, their Gram by
    # blocks of 1,000 columns here) must come within a factor of 1.2 of it.
    monkeypatch.setattr(auto, "GRAM_COLUMNS", 1000)
    X = np.random.default_rng(9).standard_normal((1500, 3000))
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    bias = 1.0 if fit_intercept else 0.0
    p = build_problem(X, y, loss="squared", alpha=1e-6, C=None, l1_ratio=0.0,
                      fit_intercept=fit_intercept, intercept_scaling=1.0, sample_weight=None,
                      loss_params={})
    expected = normalised_gram_lowest(X, bias)
    sample = normalised_gram_lowest(X[:400], bias)
    assert sample > 2.5 * expected
    assert expected / 1.2 <= auto.gram_floor(p) <= expected * 1.2


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_gram_floor_follows_columns_of_very_different_weights(fit_intercept):
    # Columns of second moments falling as 1 / (j + 20) (a few strong features, many weak
    # ones, as word frequencies fall): 1,500 rows, 6,000 features but only 643 "effective" ones
    # ((sum s_j)^2 / sum s_j^2), so a model of equal columns would call them dependent (0),
    # and a sample of 400 rows has more than 2.5 times the truth. The edge of Silverstein's
    # equation over the columns' moments must come within 1.1 of NumPy's eigenvalue.
    rng = np.random.default_rng(9)
    n, d = 1500, 6000
    moments = 1.0 / (np.arange(d) + 20.0)
    X = rng.standard_normal((n, d)) * np.sqrt(moments)
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    assert moments.sum() ** 2 / (moments ** 2).sum() < n
    bias = 1.0 if fit_intercept else 0.0
    expected = normalised_gram_lowest(X, bias)
    assert normalised_gram_lowest(X[:400], bias) > 2.5 * expected > 0.1
    p = build_problem(X, y, loss="squared", alpha=1e-6, C=None, l1_ratio=0.0,
                      fit_intercept=fit_intercept, intercept_scaling=1.0, sample_weight=None,
                      loss_params={})
    assert expected / 1.1 <= auto.gram_floor(p) <= expected * 1.1


def test_the_gram_floor_falls_with_its_samples_shortfall_below_the_model():
    # 750 pairs of nearly identical sparse rows (a second copy with 2 % noise): the columns'
    # moments are those of independent rows, whose edge is far above the pairs' true floor;
    # the sample (154 rows, holding some pairs) falls short of the model's edge for its size,
    # its blocks (fewer pairs) less so, and the estimate falls with that trend.
    X, y = scattered_rows(750, 20_000, 40, seed=13)
    noise = X.copy()
    noise.data = np.random.default_rng(14).standard_normal(noise.data.shape[0]) * 0.02
    pairs = sp.vstack([X, X + noise]).tocsr()
    labels = np.concatenate([y, y])
    p = problem(pairs, labels, "squared", 1e-6)               # (with the intercept)
    count = pairs.shape[0]
    edge = auto._spectrum_edge(auto._column_moments(p.X, p.bias, p.squared_norms(), count), count)
    expected = normalised_gram_lowest(pairs, 1.0)
    assert edge > 0.05 and expected < 0.002
    assert expected / 1e4 <= auto.gram_floor(p) <= 3.0 * expected


def test_the_gram_floor_carries_the_shortfalls_trend_to_all_rows():
    # 600 dense rows of 5,000 columns in an AR(1) law of correlation 0.97: the independent
    # columns' edge (0.43) is far above the rows' smallest eigenvalue (NumPy's, about 0.03), and
    # the sample's shortfall (195 rows) brings it only to about twice the truth; the shortfall
    # is smaller on the sample's four blocks of 48 rows, and its trend from them to the sample,
    # carried on to the 600 rows, comes within 1.4 of the truth (at every sampling seed).
    rng = np.random.default_rng(0)
    z = rng.standard_normal((600, 5000))
    X = np.empty_like(z)
    X[:, 0] = z[:, 0]
    for j in range(1, 5000):
        X[:, j] = 0.97 * X[:, j - 1] + np.sqrt(1 - 0.97 ** 2) * z[:, j]
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = np.where(np.arange(600) % 2 == 0, 1.0, -1.0)
    p = build_problem(X, y, loss="logistic", alpha=1e-6, C=None, l1_ratio=0.0,
                      fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                      loss_params={})
    expected = normalised_gram_lowest(X, 0.0)
    norms = p.squared_norms()
    size = int(np.sqrt(64 * 600))                                   # 195
    moments = auto._column_moments(p.X, 0.0, norms, 600)
    _, whole = auto._sample_floor(p.X, 0.0, norms, np.arange(600), size, 0,
                                  np.random.default_rng(0))
    at_sample = auto._spectrum_edge(moments, 600) * whole / auto._spectrum_edge(moments, size)
    assert at_sample > 1.8 * expected
    for seed in range(3):
        assert expected / 1.4 <= auto._gram_floor(p.X, 0.0, norms, seed=seed) <= expected * 1.4


def test_the_gram_floor_is_zero_when_two_rows_are_equal_whatever_the_sample():
    # 1,500 random rows of which one is repeated once: their floor is 0, which a sample of 154
    # rows would hold both copies of once in about 100 draws; every row's hash decides.
    X, y = scattered_rows(1500, 20_000, 40, seed=4)
    assert auto.gram_floor(problem(X, y, "squared", 1e-6)) > 0.15     # (with the intercept)
    repeated = sp.vstack([X[:1499], X[700]]).tocsr()
    assert normalised_gram_lowest(repeated, 1.0) < 1e-12
    assert auto.gram_floor(problem(repeated, y, "squared", 1e-6)) == 0.0
    # in float32, with the rows in another order, and with a stored -0.0 against a 0.0: the same
    assert auto.gram_floor(problem(repeated[::-1].astype(np.float32), y, "squared", 1e-6)) == 0.0
    signed = repeated.copy()
    signed.data[signed.indptr[700]] = 0.0
    signed.data[signed.indptr[1499]] = -0.0
    assert signed.indices[signed.indptr[700]] == signed.indices[signed.indptr[1499]]
    assert auto.gram_floor(problem(signed, y, "squared", 1e-6)) == 0.0


def test_the_spectrum_edge_is_marchenko_pasturs_for_equal_columns_and_the_maximum_otherwise():
    # Equal moments 1/p: (1 - sqrt(N / p))^2; none for p <= N.
    for rows, features in ((100, 400), (1000, 1001), (5, 10 ** 6)):
        moments = (np.array([1.0 / features]), np.array([float(features)]))
        assert auto._spectrum_edge(moments, rows) == pytest.approx(
            (1.0 - np.sqrt(rows / features)) ** 2, rel=1e-9)
    assert auto._spectrum_edge((np.array([0.01]), np.array([100.0])), 100) == 0.0
    # Moments of different sizes: the maximum of e(t) = -N/t + sum c s / (1 + s t) over t > 0,
    # found here by a dense grid refined by golden-section search.
    values = np.array([1e-6, 3e-5, 2e-4, 1e-3, 0.02])
    sizes = np.array([4e5, 5e3, 800.0, 90.0, 3.0])
    for rows in (50, 500, 1500):
        def e(t):
            return -rows / t + float(sizes @ (values / (1.0 + values * t)))
        grid = np.logspace(-2, 9, 4000)
        best = int(np.argmax([e(t) for t in grid]))
        low, high = np.log(grid[max(best - 1, 0)]), np.log(grid[min(best + 1, grid.size - 1)])
        ratio = (np.sqrt(5.0) - 1.0) / 2.0
        for _ in range(200):
            a, b = high - ratio * (high - low), low + ratio * (high - low)
            if e(np.exp(a)) < e(np.exp(b)):
                low = a
            else:
                high = b
        assert auto._spectrum_edge((values, sizes), rows) == pytest.approx(
            e(np.exp(low)), rel=1e-9, abs=1e-14)


def test_the_spectrum_edge_scales_with_the_moments_and_extreme_rows_do_not_raise():
    values, sizes = np.array([1e-6, 3e-5, 2e-4]), np.array([4e5, 5e3, 800.0])
    edge = auto._spectrum_edge((values, sizes), 500)
    for factor in (1e-200, 1e200):
        assert auto._spectrum_edge((values * factor, sizes), 500) == pytest.approx(
            edge * factor, rel=1e-9)
    # rows of subnormal norm, and an intercept of value 1e100: an estimate, no error
    X, y = scattered_rows(600, 20_000, 3, seed=17)
    tiny = X.copy()
    tiny.data[:9] = 1e-160
    for matrix, scaling in ((tiny, 1.0), (X, 1e100)):
        for fit_intercept in (False, True):
            p = build_problem(matrix, y, loss="squared", alpha=1e-6, C=None, l1_ratio=0.0,
                              fit_intercept=fit_intercept, intercept_scaling=scaling,
                              sample_weight=None, loss_params={})
            assert 0.0 <= auto.gram_floor(p) <= 1.0


def test_the_columns_moments_are_grouped_without_moving_the_edge():
    # The moments grouped by 1/32 of an octave give the edge of the moments themselves.
    X, y = scattered_rows(2000, 50_000, 30, seed=15)
    X = sp.csr_matrix(X.multiply(np.random.default_rng(16).uniform(0.2, 3.0, 50_000)))
    p = problem(X, y, "logistic", 1e-6)
    norms = p.squared_norms()
    moments = np.asarray(X.multiply(X).multiply(1.0 / norms[:, None]).sum(axis=0)).ravel() / 2000
    moments = moments[moments > 0]
    grouped = auto._column_moments(p.X, p.bias, norms, 2000)
    assert grouped[1].sum() == moments.shape[0] and grouped[0].shape[0] < 1000
    assert grouped[1] @ grouped[0] == pytest.approx(moments.sum(), rel=1e-12)
    exact = auto._spectrum_edge((moments, np.ones_like(moments)), 2000)
    assert 0.1 < exact
    assert auto._spectrum_edge(grouped, 2000) == pytest.approx(exact, rel=2e-3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_column_moment_groups_are_numpys(dtype, sparse):
    # rows.column_moment_groups against NumPy: m_j = sum_i s_i x_ij^2 / count, grouped by
    # floor(log2(m_j) 32) over the positive ones (moments spread over 30 octaves, stored zeros,
    # a row of scale 0), the groups' sums and sizes; None once a moment is infinite.
    from fastdual._core import rows as _rows
    from fastdual._validation import check_matrix
    rng = np.random.default_rng(21)
    X = sp.random(200, 500, density=0.05, random_state=22, format="csr", dtype=dtype)
    X.data = (X.data * 2.0 ** rng.uniform(-15, 15, X.data.shape[0])).astype(dtype)
    X.data[::9] = 0.0
    scale = rng.uniform(0.5, 2.0, 200)
    scale[3] = 0.0
    matrix = check_matrix(X if sparse else X.toarray())
    got = _rows.column_moment_groups(*matrix.kernel_args, 200, 500, scale, 170.0, 32)
    dense = X.toarray().astype(np.float64)
    moments = (scale @ (dense * dense)) / 170.0
    positive = moments[moments > 0.0]
    groups = np.floor(np.log2(positive) * 32).astype(np.int64) + 1075 * 32
    assert np.array_equal(got[1], np.bincount(groups, minlength=got[1].shape[0]))
    np.testing.assert_allclose(got[0], np.bincount(groups, weights=positive,
                                                   minlength=got[0].shape[0]), rtol=1e-13)
    assert got[1].sum() == positive.shape[0] > 300
    scale[int(np.argmax(np.abs(dense).sum(axis=1)))] = np.inf
    assert _rows.column_moment_groups(*matrix.kernel_args, 200, 500, scale, 170.0, 32) is None


def test_the_gram_floor_is_one_for_orthogonal_rows_and_zero_for_dependent_ones():
    n = 1200                                  # more rows than the sample
    X = sp.csr_matrix((np.random.default_rng(5).uniform(0.5, 2.0, n), np.arange(n) * 3,
                       np.arange(n + 1)), shape=(n, 3 * n))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    p = build_problem(X, y, loss="squared", alpha=1e-6, C=None, l1_ratio=0.0,
                      fit_intercept=False, intercept_scaling=1.0, sample_weight=None,
                      loss_params={})
    assert auto.gram_floor(p) == pytest.approx(1.0, abs=1e-12)
    # every row twice: dependent rows, whichever the sample holds
    twice = sp.vstack([X[: n // 2], X[: n // 2]]).tocsr()
    assert auto.gram_floor(problem(twice, y, "squared", 1e-6)) == 0.0
    # more rows than features (with the intercept's): dependent, and nothing is sampled
    narrow, labels = problem_for("logistic", n=50, d=48, seed=0)
    assert auto.gram_floor(problem(narrow, labels, "logistic", 1e-6)) == 0.0


def test_orthogonal_rows_with_an_intercept_are_held_up_by_their_columns_of_one_entry():
    # One entry per row, each in its own column, and the intercept: the model of shared columns
    # has no more columns than rows (edge 0); the columns of one entry bound the floor from
    # below by the smallest x_i^2 / (x_i^2 + 1), which is the estimate, under NumPy's value.
    n = 1200
    values = np.random.default_rng(5).uniform(0.5, 2.0, n)
    X = sp.csr_matrix((values, np.arange(n) * 3, np.arange(n + 1)), shape=(n, 3 * n))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    p = problem(X, y, "squared", 1e-6)
    bound = float(np.min(values ** 2 / (values ** 2 + 1.0)))
    assert auto.gram_floor(p) == pytest.approx(bound, rel=1e-12)
    assert bound <= normalised_gram_lowest(X, 1.0) + 1e-12


def test_the_gram_floor_is_computed_once_per_rows_and_intercept(monkeypatch):
    X, y = scattered_rows(300, 5_000, 20, seed=6)
    calls = []
    estimate = auto._gram_floor
    monkeypatch.setattr(auto, "_gram_floor", lambda *args: calls.append(1) or estimate(*args))
    shared = build_problem(X, y, loss="logistic", alpha=1e-6, C=None, l1_ratio=0.0,
                           fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                           loss_params={})
    first = auto.gram_floor(shared)
    again = dataclasses.replace(shared, loss_name="squared")     # a problem on the same rows
    assert auto.gram_floor(again) == first and len(calls) == 1
    assert auto.gram_floor(dataclasses.replace(shared, bias=2.0)) != first
    assert len(calls) == 2


def test_wide_nearly_orthogonal_rows_go_to_sdca_and_dependent_ones_to_newton():
    X, y = scattered_rows(400, 2 ** 16, 20, seed=7)
    for loss in ("logistic", "squared", "squared_epsilon_insensitive"):
        p = build_problem(X, y, loss=loss, alpha=1e-7, C=None, l1_ratio=0.0,
                          fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                          loss_params={})
        assert auto.condition_number(p) >= auto.NEWTON_KAPPA
        assert auto.gram_floor(p) >= auto.GRAM_FLOOR
        assert auto.rule(p) == ("sdca", {}, 4)
        assert auto.plan(p, {}, fastdual.SOLVERS) == [("sdca", {}), ("newton", {})]
    # the same rows, each twice: dependent, Newton as before
    twice = sp.vstack([X[:200], X[:200]]).tocsr()
    p = problem(twice, y, "logistic", 1e-7)
    assert auto.gram_floor(p) == 0.0 and auto.rule(p)[0] == "newton"


def test_sdca_on_nearly_orthogonal_rows_is_certified_and_reaches_newtons_optimum():
    X, y = scattered_rows(400, 2 ** 16, 20, seed=8)
    model = fastdual.train(X, y, loss="logistic", alpha=1e-7, tol=1e-8, random_state=0)
    assert model.solver == "sdca" and model.converged_
    reference = fastdual.train(X, y, loss="logistic", alpha=1e-7, tol=1e-10, solver="newton")
    assert model.primal_ <= reference.primal_ * (1 + 1e-8) + 1e-12
    certificate = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="logistic",
                                       alpha=1e-7, dual_coef=model.dual_coef_)
    assert certificate.gap == pytest.approx(model.gap_, rel=1e-9, abs=1e-15)
