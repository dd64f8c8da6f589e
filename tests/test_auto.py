"""solver="auto" (the default): each documented rule picks its solver, the model records the
solver that ran, an explicit solver or solver options win, and the certificate is that of the
returned model."""
import numpy as np
import pytest
import scipy.sparse as sp

import fastdual
from conftest import problem_for
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
    ("logistic", 50.0, 0.0, False, True, ("newton", {}), 4),
    ("squared", 50.0, 0.0, False, True, ("newton", {}), 4),
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
