"""fastdual.plot_convergence draws the certified gap and the primal of each run."""
import numpy as np
import pytest

import fastdual
from conftest import problem_for

matplotlib = pytest.importorskip("matplotlib")      # the "plot" extra
matplotlib.use("Agg")


def test_plot_convergence_draws_each_models_history():
    X, y = problem_for("logistic", n=100, d=4, seed=0)
    models = [fastdual.train(X, y, loss="logistic", check_every=1, solver=solver)
              for solver in ("sdca", "newton")]
    fig = fastdual.plot_convergence(models, x="seconds", labels=["SDCA", "Newton"])
    gap_ax, primal_ax = fig.axes[:2]
    assert [line.get_label() for line in gap_ax.get_lines()] == ["SDCA", "Newton"]
    ys = gap_ax.get_lines()[0].get_ydata()
    expected = [h["gap"] / h["primal"] for h in models[0].history_]
    np.testing.assert_allclose(ys, np.maximum(expected, np.finfo(float).tiny))
    assert np.array_equal(primal_ax.get_lines()[1].get_ydata(),
                          [h["primal"] for h in models[1].history_])
    with pytest.raises(ValueError, match="x must be 'epochs' or 'seconds'"):
        fastdual.plot_convergence(models, x="passes")
