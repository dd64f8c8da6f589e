"""fastdual.cross_validate and fastdual.regularization_path."""
import numpy as np
import pytest

import fastdual
from conftest import problem_for
from fastdual.solvers import takes_warm_start


def test_the_path_is_certified_and_warm_started():
    X, y = problem_for("squared_hinge", n=200, d=6, seed=0)
    Cs = [10.0, 0.01, 1.0, 0.1]
    common = dict(loss="squared_hinge", tol=1e-6, solver="sdca", random_state=0,
                  max_epochs=20_000)
    path = fastdual.regularization_path(X, y, Cs, **common)
    assert [round(1.0 / (m.alpha * 200), 10) for m in path] == sorted(Cs)
    for model in path:
        cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="squared_hinge",
                                    C=1.0 / (model.alpha * 200), dual_coef=model.dual_coef_)
        assert (cert.primal, cert.dual) == (model.primal_, model.dual_) and model.converged_
    cold = [fastdual.train(X, y, C=C, **common) for C in sorted(Cs)]
    assert all(model.converged_ for model in cold)
    # The warm start pays: the path reaches the same tolerance in fewer epochs than cold runs
    # at its C's (by about a third here), and so does its last, hardest, training.
    assert sum(m.n_epochs_ for m in path) < sum(m.n_epochs_ for m in cold)
    assert path[-1].n_epochs_ < cold[-1].n_epochs_
    with pytest.raises(ValueError, match="sets C and warm_start itself"):
        fastdual.regularization_path(X, y, Cs, C=1.0)


PATHS_WITHOUT_WARM_STARTS = [
    # solver="auto" trains a free intercept with an l1 term by RDA when the loss is non-smooth;
    # RDA starts from its own gradient sums, never from a model.
    dict(loss="hinge", l1_ratio=0.5, Cs=[0.03, 0.1], tol=1e-2, solver="auto"),
    dict(loss="logistic", l1_ratio=1.0, Cs=[0.03, 0.1], tol=1e-3, solver="rda"),
]


@pytest.mark.parametrize("case", PATHS_WITHOUT_WARM_STARTS, ids=lambda case: case["loss"])
def test_a_path_through_a_solver_that_takes_no_warm_start(case):
    X, y = problem_for(case["loss"], n=60, d=4, seed=2)
    Cs = case["Cs"]
    common = dict(loss=case["loss"], l1_ratio=case["l1_ratio"], regularize_intercept=False,
                  tol=case["tol"], max_epochs=20_000, random_state=0, solver=case["solver"])
    path = fastdual.regularization_path(X, y, Cs, **common)
    assert len(path) == len(Cs)
    for C, model in zip(Cs, path):
        assert not takes_warm_start(model.solver)         # the case this test is for
        assert model.converged_ and model.relative_gap_ <= case["tol"]
        cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss=case["loss"], C=C,
                                    l1_ratio=case["l1_ratio"], regularize_intercept=False,
                                    dual_coef=model.dual_coef_)
        assert (cert.primal, cert.dual) == (model.primal_, model.dual_)
        cold = fastdual.train(X, y, C=C, **common)
        # Both within their certified gaps of the one optimum.
        assert abs(model.primal_ - cold.primal_) <= model.gap_ + cold.gap_
    scores = fastdual.cross_validate(X, y, n_folds=3, Cs=Cs, **common)
    assert scores["per_fold"].shape == (3, len(Cs))


def test_cross_validation_is_the_mean_over_seeded_folds():
    X, y = problem_for("logistic", n=90, d=4, seed=1)
    result = fastdual.cross_validate(X, y, n_folds=3, random_state=7, loss="logistic", C=1.0)
    # The same folds by hand.
    order = np.random.default_rng(7).permutation(90)
    scores = []
    for k in range(3):
        test = order[k::3]
        keep = np.ones(90, bool)
        keep[test] = False
        model = fastdual.train(X[keep], y[keep], loss="logistic", C=1.0, random_state=7)
        scores.append(np.mean(model.predict(X[test]) == y[test]))
    assert result["accuracy"] == pytest.approx(np.mean(scores), rel=1e-12)
    grid = fastdual.cross_validate(X, y, n_folds=3, random_state=7, loss="logistic",
                                   Cs=[0.01, 1.0, 100.0])
    assert grid["per_fold"].shape == (3, 3) and grid["best_C"] in (0.01, 1.0, 100.0)
    assert grid["accuracy"][1] == pytest.approx(result["accuracy"], abs=0.02)
    with pytest.raises(ValueError, match="n_folds must be"):
        fastdual.cross_validate(X, y, n_folds=1)
