"""Ctrl-C beyond one problem: one-vs-rest in threads stops (once: with every class's certified
point; twice: at once), serial one-vs-rest keeps its finished classes, a second Ctrl-C during a
long kernel stops at once, and an interrupted partial_fit counts what it trained on."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

import fastdual
from fastdual import _loop
from fastdual._problem import build_problem
from fastdual.solvers import _f1

OVR_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    import fastdual
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 50)); y = rng.integers(0, 4, 20000)
    fastdual.train(X[:50], y[:50] % 2, max_epochs=2, tol=0.0)       # imports done
    print("start", flush=True)
    try:
        fastdual.train(X, y, loss="hinge", alpha=1e-7, tol=0.0, max_epochs=10**7, n_jobs=3)
    except fastdual.TrainingInterrupted as stop:
        m = stop.model
        print("interrupted", None if m is None else m.class_certificates_[:, 2].tolist(),
              flush=True)
""")


def run_script(script, presses, tmp_path, wait=1.0):
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(fastdual.__file__))}
    proc = subprocess.Popen([sys.executable, "-W", "ignore", "-c", script], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "start", proc.stderr.read()
        time.sleep(wait)
        sent = time.perf_counter()
        for k in range(presses):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.2)
        out, err = proc.communicate(timeout=60)
        return out, err, time.perf_counter() - sent
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("presses", [1, 2])
def test_one_vs_rest_in_threads_stops_on_ctrl_c(tmp_path, presses):
    out, err, seconds = run_script(OVR_SCRIPT, presses, tmp_path)
    assert "interrupted" in out, err
    if presses == 1:
        # every class certified where the flag stopped it (all had started: 3 threads, and
        # the fourth class certifies its start)
        epochs = eval(out.split("interrupted", 1)[1].strip())
        assert len(epochs) == 4 and sum(e > 0 for e in epochs) >= 3
    assert seconds < 30


def test_serial_one_vs_rest_keeps_the_finished_classes():
    """Ctrl-C while the third class trains: the first two keep the models they finished with
    (as trained alone), the third its best certified point, the fourth its start."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 6))
    y = np.argmax(X[:, :4] + 0.5 * rng.standard_normal((300, 4)), axis=1)
    objective = dict(loss="squared_hinge", alpha=1e-3, tol=1e-6, random_state=0,
                     check_every=1, solver="sdca")

    def press(info):
        if info["class"] == 2 and info["epoch"] == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(fastdual.TrainingInterrupted) as caught:
        fastdual.train(X, y, callback=press, **objective)
    model = caught.value.model
    assert model is not None and model.coef_.shape == (4, 6)
    for m in range(2):
        alone = fastdual.train(X, np.where(y == m, 1, -1), **objective)
        np.testing.assert_array_equal(model.coef_[m], alone.coef_)
        assert model.class_certificates_[m, 2] == alone.n_epochs_
    assert model.class_certificates_[2, 2] == 2 and model.class_certificates_[3, 2] == 0
    np.testing.assert_array_equal(model.coef_[3], 0.0)
    cert = fastdual.duality_gap(X, y, model.coef_, model.intercept_,
                                dual_coef=model.dual_coef_, loss="squared_hinge", alpha=1e-3)
    assert (cert.primal, cert.dual) == (model.primal_, model.dual_)


class SlowDriver:
    """A driver whose epoch is one long nogil kernel (F1's worst labeling over 30000 scores,
    about a second) and whose point is w = 0: for the loop's Ctrl-C handling alone."""
    name = "slow"
    helper_l2 = 0.0

    def __init__(self, problem, size=30000):
        self.problem = problem
        self.resize(size)
        self.epochs = 0

    def resize(self, size):
        rng = np.random.default_rng(0)
        self.scores = rng.standard_normal(size)
        self.labels = np.where(np.arange(size) % 2 == 0, 1.0, -1.0)

    def epoch(self):
        _f1.worst_labeling(self.scores, self.labels)
        self.epochs += 1

    def check_due(self, epoch):
        return True

    def point(self):
        return np.zeros(self.problem.n_features + 1), None

    def after_check(self, checkpoint):
        pass


def test_a_second_ctrl_c_during_a_long_kernel_stops_at_once():
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    problem = build_problem(X, y, loss="hinge", alpha=0.1, C=None, l1_ratio=0.0,
                            fit_intercept=True, intercept_scaling=1.0, sample_weight=None,
                            loss_params={})
    driver = SlowDriver(problem)
    size = 30000
    for _ in range(4):          # an epoch of about 1.5 s on this machine, as loaded as it is
        began = time.perf_counter()
        driver.epoch()
        seconds_per_epoch = time.perf_counter() - began
        if seconds_per_epoch > 1.0:
            break
        size = int(size * min(4.0, np.sqrt(1.5 / seconds_per_epoch)))   # O(size^2) kernel
        driver.resize(size)
    driver.epochs = 0
    assert seconds_per_epoch > 3 * 0.15 + 0.1, "the kernel is too fast to tell"
    times = {}

    def presses():
        # inside the second epoch: the first press, then the second 0.15 s later
        time.sleep(1.3 * seconds_per_epoch)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.15)
        times["second"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=presses)
    thread.start()
    result = _loop.run(problem, driver, tol=0.0, max_epochs=100)
    stopped = time.perf_counter()
    thread.join()
    assert result.interrupted and result.checkpoint.epoch == 1
    # at once: well before the epoch the second press fell in could have ended
    assert stopped - times["second"] < 0.5 * seconds_per_epoch


def test_an_interrupted_partial_fit_counts_the_rows_it_trained_on():
    """The kernel runs a whole chunk without the GIL; Ctrl-C lands after it: n_samples_seen_
    must say the chunk was trained on (it said 0 while the state had taken every step)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3_000_000, 3)).astype(np.float32)
    y = np.where(X[:, 0] > 0, 1, -1)
    stream = fastdual.OnlineRDA("hinge", classes=[-1, 1])
    from fastdual.solvers.rda import RDAState
    original = RDAState.run

    def run_and_press(self, *args):
        timer = threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            return original(self, *args)
        finally:
            timer.join()

    RDAState.run = run_and_press
    try:
        with pytest.raises(KeyboardInterrupt):
            stream.partial_fit(X, y)
            time.sleep(1.0)           # (should the kernel finish before the press)
    finally:
        RDAState.run = original
    assert stream.state.steps == 3_000_000
    assert stream.n_samples_seen_ == stream.state.steps
