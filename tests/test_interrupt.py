"""Ctrl-C: one press stops a script (TrainingInterrupted is a KeyboardInterrupt) and the best
certified model so far stays reachable, its n_epochs_, history_ and certificate describing
exactly the point returned."""
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import fastdual
from conftest import binary_problem


def assert_describes_itself(model, X, y, **objective):
    """history_ ends at the returned point and the certificate is that of coef_ and dual_coef_."""
    assert model.history_[-1]["epoch"] == model.n_epochs_
    assert model.history_[-1]["gap"] == model.gap_
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_, dual_coef=model.dual_coef_,
                                **objective)
    assert (cert.primal, cert.dual) == (model.primal_, model.dual_)


def press_ctrl_c_at(epoch):
    def callback(info):
        if info["epoch"] == epoch:
            os.kill(os.getpid(), signal.SIGINT)
    return callback


def test_ctrl_c_raises_a_keyboard_interrupt_carrying_the_model():
    X, y = binary_problem(n=80, d=5, seed=14)
    objective = dict(loss="smooth_hinge", alpha=1e-4)
    with pytest.raises(KeyboardInterrupt) as caught:
        fastdual.train(X, y, tol=1e-14, callback=press_ctrl_c_at(3), random_state=0,
                       check_every=1, solver="sdca", **objective)
    assert isinstance(caught.value, fastdual.TrainingInterrupted)
    model = caught.value.model
    assert not model.converged_
    assert_describes_itself(model, X, y, **objective)
    # The same three epochs, uninterrupted: the model is the one of them with the smallest
    # relative gap (early gaps at this small alpha are not monotone), and its epochs end there.
    reference = fastdual.train(X, y, tol=0.0, max_epochs=3, random_state=0, check_every=1,
                               solver="sdca", **objective)
    gaps = [h["gap"] / abs(h["primal"]) for h in reference.history_]
    assert model.n_epochs_ == 1 + int(np.argmin(gaps))
    assert [h["gap"] for h in model.history_] == [
        h["gap"] for h in reference.history_[:model.n_epochs_]]
    at_that_epoch = fastdual.train(X, y, tol=0.0, max_epochs=model.n_epochs_, random_state=0,
                                   solver="sdca", **objective)
    np.testing.assert_array_equal(model.coef_, at_that_epoch.coef_)


def test_on_interrupt_return_gives_the_model_with_a_warning():
    X, y = binary_problem(n=80, d=5, seed=14)
    with pytest.warns(fastdual.ConvergenceWarning, match="interrupted; returning .* of epoch 4"):
        model = fastdual.train(X, y, alpha=1e-2, tol=1e-14, callback=press_ctrl_c_at(4),
                               random_state=0, check_every=1, on_interrupt="return",
                               solver="sdca")
    assert model.n_epochs_ == 4 and [h["epoch"] for h in model.history_] == [1, 2, 3, 4]
    assert_describes_itself(model, X, y, loss="smooth_hinge", alpha=1e-2)


def test_ctrl_c_between_checks_certifies_the_point_it_leaves():
    """Under the adaptive schedule the interrupt falls between checks: the epoch it ends is
    certified then and there, and is the model returned when it is the best so far."""
    X, y = binary_problem(n=3000, d=20, seed=3)
    objective = dict(loss="hinge", alpha=1e-7)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(fastdual.TrainingInterrupted) as caught:
            fastdual.train(X, y, tol=0.0, max_epochs=10**7, random_state=0, **objective)
    finally:
        timer.cancel()
    model = caught.value.model
    assert 1 <= model.n_epochs_ < 10**7
    assert_describes_itself(model, X, y, **objective)
    gaps = [h["gap"] / abs(h["primal"]) for h in model.history_]
    assert gaps[-1] == min(gaps)


def test_keyboard_interrupt_raised_in_a_callback_keeps_the_best_checked_model():
    X, y = binary_problem(n=80, d=5, seed=14)

    def interrupt(info):
        if info["epoch"] == 3:
            raise KeyboardInterrupt

    with pytest.raises(fastdual.TrainingInterrupted) as caught:
        fastdual.train(X, y, alpha=1e-4, tol=1e-14, callback=interrupt, random_state=0,
                       check_every=1, solver="sdca")
    model = caught.value.model
    assert model.n_epochs_ <= 3
    assert_describes_itself(model, X, y, loss="smooth_hinge", alpha=1e-4)
    everything = fastdual.train(X, y, alpha=1e-4, tol=0.0, max_epochs=3, random_state=0,
                                check_every=1, solver="sdca")
    best = min(everything.history_, key=lambda h: h["gap"] / abs(h["primal"]))
    assert model.gap_ == best["gap"]


def test_one_ctrl_c_stops_a_script_that_trains_in_a_loop(tmp_path):
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import fastdual
        rng = np.random.default_rng(0)
        X = rng.standard_normal((3000, 20))
        y = np.sign(X[:, 0] + 0.5 * rng.standard_normal(3000))
        for trial in range(10**6):
            fastdual.train(X, y, loss="hinge", alpha=1e-7, tol=0.0, max_epochs=200,
                           random_state=trial)
            if trial == 0:
                print("trained", flush=True)
        print("the loop went on", flush=True)
    """)
    # The package imported here, wherever it is installed.
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(fastdual.__file__))}
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "trained", proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode != 0
    # TrainingInterrupted if the press fell inside a training, a plain KeyboardInterrupt if it
    # fell between two: either way the script stops.
    last_line = err.strip().splitlines()[-1]
    assert last_line.startswith(("KeyboardInterrupt", "fastdual._loop.TrainingInterrupted"))
    assert "the loop went on" not in out


def verbose_2_run(capsys):
    """Seven checked epochs with verbose=2: (model, captured stdout and stderr)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 4))
    y = np.where(X[:, 0] > 0, 1, -1)
    model = fastdual.train(X, y, loss="logistic", verbose=2, tol=0.0, max_epochs=7,
                           check_every=1, solver="sdca")
    return model, capsys.readouterr()


def test_verbose_2_shows_a_progress_bar_on_stderr(capsys):
    pytest.importorskip("tqdm")          # the "progress" extra
    model, captured = verbose_2_run(capsys)
    assert "fastdual:" in captured.err and "/7" in captured.err and "epoch" in captured.err
    assert captured.out == "" and model.n_epochs_ == 7


def test_verbose_2_without_tqdm_prints_the_lines(capsys, monkeypatch):
    """The documented fallback when the "progress" extra is not installed."""
    monkeypatch.setitem(sys.modules, "tqdm", None)      # import tqdm raises ImportError
    model, captured = verbose_2_run(capsys)
    lines = captured.out.splitlines()
    assert lines[0].split()[:4] == ["epoch", "primal", "dual", "gap"]
    assert [int(line.split()[0]) for line in lines[1:]] == list(range(1, 8))
    assert "fastdual:" not in captured.err and model.n_epochs_ == 7
