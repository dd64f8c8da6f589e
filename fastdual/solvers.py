"""Solver names -> the Python driver around each kernel, and which losses each supports."""
import numpy as np

from fastdual import _sdca
from fastdual._driver import CheckSchedule, Monitor, relative_gap
from fastdual._validation import check_choice

SDCA_OPTIONS = {"I": 1, "IV": 4}
SAMPLINGS = ("permutation", "uniform")
OUTPUTS = ("last", "average")


def _soft_threshold(v, kappa):
    return np.sign(v) * np.maximum(np.abs(v) - kappa, 0.0)


def _nonzeros(w):
    return int(np.count_nonzero(w))


def run_sdca(problem, *, tol, max_epochs, seed, verbose, callback, initial_dual,
             sdca_option="I", sampling="permutation", output="last", shrinking=True,
             check_every="auto"):
    """Prox-SDCA (seed 000, Figure 1); returns (w with the intercept feature last, alpha, info)."""
    option = SDCA_OPTIONS[check_choice("sdca_option", sdca_option, tuple(SDCA_OPTIONS))]
    with_replacement = check_choice("sampling", sampling, SAMPLINGS) == "uniform"
    averaging = check_choice("output", output, OUTPUTS) == "average"

    n, d = problem.n_samples, problem.n_features
    l2, l1 = problem.l2, problem.l1
    kappa = l1 / l2
    alpha = np.zeros(n) if initial_dual is None else np.array(initial_dual, dtype=np.float64)
    v = np.zeros(d + 1)
    if initial_dual is not None:
        problem.primal_dual(np.zeros(d + 1), alpha, v_out=v, l2=l2)   # v(alpha) for the kernels
    w = v if l1 == 0.0 else _soft_threshold(v, kappa)
    sq_norms = problem.squared_norms()
    q_max = float(np.max(problem.sample_weight * sq_norms)) / (l2 * n)
    order = np.arange(n, dtype=np.intp)
    rng_state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)
    data, indices, indptr = problem.X.kernel_args
    v_check = np.empty(d + 1)

    def certify(w_point, alpha_point):
        primal, dual = problem.primal_dual(w_point, alpha_point, v_out=v_check)
        return primal, dual

    # Averaging option of Figure 1 over the latter half of the run: epoch-end snapshots summed over
    # the window (E0, E], restarted whenever E is a power of two, so that at E = 2^k the average
    # covers exactly epochs 2^(k-1)+1 .. 2^k. The certificate is checked at those epochs.
    alpha_sum = np.zeros(n) if averaging else None
    v_sum = np.zeros(d + 1) if averaging else None
    window = 0

    def averaged_point():
        v_bar = v_sum / window
        return _soft_threshold(v_bar, kappa), alpha_sum / window

    # Pure l1: the kernels solve the problem with lambda/2 ||w||^2 added (seed 000 Sec. 3.1), whose
    # optimum is within lambda/2 ||w*||^2 of the l1 optimum. Sec. 3.1 fixes lambda = eps / B^2 with
    # B >= ||w*||, but any B known in advance is so loose that the steps become tiny. Instead,
    # continuation: whenever the lambda-problem's own gap is below half of lambda/2 ||w||^2 (so
    # the distance to the l1 optimum is dominated by the lambda term, not by optimisation), lambda
    # shrinks tenfold and alpha carries over (v and w are rebuilt for the new lambda), until the
    # exact pure-l1 certificate reaches tol.
    continuation = problem.l2_added > 0.0

    def shrink_lambda(factor):
        # After a pure-l1 check, v_check holds (1/n) X^T (c alpha), so v(alpha) = v_check / lambda.
        nonlocal l2, kappa, q_max
        l2 = l2 * factor
        kappa = l1 / l2
        q_max = q_max / factor
        v[:] = v_check / l2
        w[:] = _soft_threshold(v, kappa)

    # Shrinking (LIBLINEAR's, see _sdca.pyx): the threshold is the previous epoch's largest
    # projected slope. When the active set is solved to unshrink_tol (a tenth of the first epoch's
    # slope, then a tenth of that each time), everyone comes back for the next epoch.
    if not isinstance(shrinking, (bool, np.bool_)):
        raise TypeError(f"shrinking must be True or False, got {shrinking!r}")
    n_active = n
    shrink_threshold = np.inf
    unshrink_tol = None

    schedule = CheckSchedule(check_every, tol, max_epochs)
    monitor = Monitor(tol, verbose, callback, "sdca")
    result_w, result_alpha = w, alpha
    primal = dual = np.nan
    best = None               # (w, alpha, primal, dual) of the smallest certified gap so far
    epoch = 0
    interrupted = False
    done = False
    try:
        while epoch < max_epochs and not done:
            max_slope, n_active = _sdca.sdca_epoch(
                data, indices, indptr, n, d, problem.bias, problem.y, problem.sample_weight,
                sq_norms, alpha, v, w, problem.loss, l2, l1, option, q_max, with_replacement,
                order, rng_state, n_active, shrink_threshold if shrinking else np.inf)
            epoch += 1
            if unshrink_tol is None:
                unshrink_tol = 0.1 * max_slope
            shrink_threshold = max_slope if max_slope > 0 else np.inf
            if n_active < n and max_slope <= unshrink_tol:
                n_active = n
                shrink_threshold = np.inf
                unshrink_tol *= 0.1
            if averaging:
                alpha_sum += alpha
                v_sum += v
                window += 1
                if epoch & (epoch - 1) and epoch != max_epochs:
                    continue              # not a power of two: no check this epoch
                result_w, result_alpha = averaged_point()
                alpha_sum[:] = 0.0
                v_sum[:] = 0.0
                window = 0
            elif not schedule.due(epoch):
                continue
            if continuation:
                aug_primal, aug_dual = problem.primal_dual(result_w, result_alpha, v_out=v_check,
                                                           l2=l2)
            primal, dual = certify(result_w, result_alpha)
            if best is None or primal - dual < best[2] - best[3]:
                best = (result_w.copy(), result_alpha.copy(), primal, dual)
            done = monitor.record(epoch, primal, dual, _nonzeros(result_w[:d]))
            schedule.checked(epoch, relative_gap(primal, dual))
            if continuation and not done and not averaging:
                # Shrink once the lambda-problem is solved well below the bias its lambda/2||w||^2
                # term puts on the l1 optimum.
                if aug_primal - aug_dual <= 0.25 * l2 * float(result_w @ result_w):
                    shrink_lambda(0.1)
    except KeyboardInterrupt:
        # The arrays hold a completed epoch (the kernels run between Python's signal checks):
        # return it or the best certified point seen, whichever has the smaller gap.
        interrupted = True
        result_w, result_alpha = w, alpha
        primal, dual = certify(w, alpha)
        if best is not None and best[2] - best[3] < primal - dual:
            result_w, result_alpha, primal, dual = best
    converged = (not interrupted) and monitor.converged(primal, dual)
    if not converged:
        monitor.warn_unconverged(primal, dual, epoch, interrupted)
    info = {"primal": primal, "dual": dual, "converged": converged, "n_epochs": epoch,
            "history": monitor.history, "l2_added": l2 if continuation else 0.0}
    return np.array(result_w), np.array(result_alpha), info


SOLVERS = {
    "sdca": {"run": run_sdca,
             "losses": ("hinge", "squared_hinge", "smooth_hinge", "logistic", "squared",
                        "absolute", "epsilon_insensitive"),
             "options": ("sdca_option", "sampling", "output")},
}


def get_solver(name, loss_name):
    if not isinstance(name, str) or name not in SOLVERS:
        raise ValueError(f"solver must be one of {sorted(SOLVERS)}, got {name!r}")
    spec = SOLVERS[name]
    if loss_name not in spec["losses"]:
        raise ValueError(f"solver={name!r} does not support loss={loss_name!r}; "
                         f"it supports {list(spec['losses'])}")
    return spec
