"""Prox-SDCA (seed 000, Figure 1): the driver around the epoch kernel of _sdca.pyx.

The training loop (fastdual._loop) calls epoch() and point(); the hooks carry what only SDCA has:
shrinking (inside epoch()), the averaging option (check_due / point) and the pure-l1 continuation
(after_check).
"""
import numpy as np

from fastdual._core.sampling import alias_table
from fastdual._loop import Option
from fastdual.solvers import _sdca
from fastdual.solvers.common import helper_can_shrink, soft_threshold

OPTION_CODES = {"I": 1, "IV": 4}


class SDCA:
    name = "sdca"
    losses = ("hinge", "squared_hinge", "smooth_hinge", "logistic", "squared", "absolute",
              "epsilon_insensitive")
    pure_l1 = True
    free_intercept = False
    options = {
        "sdca_option": Option("I", choices=("I", "IV"),
                              help="I: exact coordinate maximisation; IV: the step of seed 000 "
                                   "Option IV"),
        "sampling": Option("permutation", choices=("permutation", "uniform", "weighted"),
                           help="a fresh permutation each epoch, or draws with replacement: "
                                "uniform, or weighted by importance (rows of large "
                                "c_i ||x_i||^2 more often)"),
        "output": Option("last", choices=("last", "average"),
                         help="the last iterate, or the average over the latter half of the "
                              "epochs (checked at powers of two)"),
        "shrinking": Option(True, kind=bool,
                            help="LIBLINEAR's shrinking (losses with box-constrained duals)"),
    }

    def __init__(self, problem, options, seed, initial_duals=None):
        self.problem = problem
        n, d = problem.n_samples, problem.n_features
        self.option = OPTION_CODES[options["sdca_option"]]
        self.weighted = options["sampling"] == "weighted"
        self.with_replacement = options["sampling"] in ("uniform", "weighted")
        self.averaging = options["output"] == "average"
        self.shrinking = options["shrinking"]

        # Pure l1: the kernel solves the problem with working_l2/2 ||w||^2 added (seed 000
        # Sec. 3.1), whose optimum is within working_l2/2 ||w*||^2 of the l1 optimum. Sec. 3.1
        # fixes the helper strength from a bound B >= ||w*||, but any B known in advance is so
        # loose that the steps become tiny. Instead, continuation (after_check). Otherwise the
        # working l2 is the problem's own.
        self.continuation = problem.l2 == 0.0
        self.working_l2 = problem.l1 if self.continuation else problem.l2
        self.l1 = problem.l1

        self.duals = np.zeros(n) if initial_duals is None else np.array(initial_duals, np.float64)
        self.v = np.zeros(d + 1)
        if initial_duals is not None:   # v(duals), by the certificate's own pass
            problem.primal_dual(np.zeros(d + 1), self.duals, l2=self.working_l2, v_out=self.v)
        # With l1 = 0, w = v: the kernel gets the same array twice and never writes w.
        self.w = self.v if self.l1 == 0.0 else soft_threshold(self.v, self.l1 / self.working_l2)
        self.sq_norms = problem.squared_norms()
        self.weighted_sq_norm_max = float(np.max(problem.sample_weight * self.sq_norms))
        self.order = np.arange(n, dtype=np.intp)
        self._set_sampling()
        self.rng_state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)

        # Shrinking (LIBLINEAR's, see _sdca.pyx): the threshold is the previous epoch's largest
        # projected slope. When the active set is solved to unshrink_tol (a tenth of the first
        # epoch's slope, then a tenth of that each time), everyone comes back for the next epoch.
        self.n_active = n
        self.shrink_threshold = np.inf
        self.unshrink_tol = None

        # Averaging option of Figure 1 over the latter half of the run: epoch-end snapshots summed
        # over the window since the previous check, checks at powers of two, so that at
        # E = 2^k the average covers exactly epochs 2^(k-1)+1 .. 2^k. A pure-l1 continuation
        # step starts a new run (a new working problem): E counts from its start.
        self.duals_sum = np.zeros(n) if self.averaging else None
        self.v_sum = np.zeros(d + 1) if self.averaging else None
        self.window = 0
        self.run_start = 0

    def _set_sampling(self):
        """Importance sampling (sampling="weighted"): p_i half uniform, half proportional to
        c_i ||x_i||^2, the quantity SDCA's step size and rate depend on. (Proportional to
        1 + c_i ||x_i||^2 / (l2 gamma n), the distribution of the importance-sampling analysis
        of Prox-SDCA, is nearly proportional to c_i ||x_i||^2 at small l2 and oversamples long
        rows: slower than uniform on w8a, docs/benchmarks.md Sec. D.) Option I still
        maximises the dual exactly along the coordinate drawn, so the dual never decreases."""
        self.alias_keep, self.alias = np.empty(0), np.empty(0, dtype=np.intp)
        if not self.weighted:
            return
        n = self.problem.n_samples
        importance = self.problem.sample_weight * self.sq_norms
        p = 0.5 / n + 0.5 * importance / max(np.sum(importance), np.finfo(float).tiny)
        self.probabilities = p / np.sum(p)
        self.alias_keep, self.alias = alias_table(self.probabilities)

    @property
    def helper_l2(self):
        """The l2 strength added for pure l1 (0 otherwise): reported as the model's l2_added_."""
        return self.working_l2 if self.continuation else 0.0

    def epoch(self):
        problem = self.problem
        data, indices, indptr = problem.X.kernel_args
        q_max = self.weighted_sq_norm_max / (self.working_l2 * problem.n_samples)
        max_slope, self.n_active = _sdca.sdca_epoch(
            data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
            problem.y, problem.sample_weight, self.sq_norms, self.duals, self.v, self.w,
            problem.loss, self.working_l2, self.l1, self.option, q_max, self.with_replacement,
            self.order, self.rng_state, self.n_active,
            self.shrink_threshold if self.shrinking else np.inf, self.alias_keep, self.alias)
        if self.unshrink_tol is None:
            self.unshrink_tol = 0.1 * max_slope
        self.shrink_threshold = max_slope if max_slope > 0 else np.inf
        if self.n_active < problem.n_samples and max_slope <= self.unshrink_tol:
            self.n_active = problem.n_samples
            self.shrink_threshold = np.inf
            self.unshrink_tol *= 0.1
        if self.averaging:
            self.duals_sum += self.duals
            self.v_sum += self.v
            self.window += 1

    def check_due(self, epoch):
        """Averaging: a point exists at the end of each window (powers of two)."""
        if self.averaging:
            epochs = epoch - self.run_start
            return epochs & (epochs - 1) == 0
        return None

    def point(self):
        if self.averaging and self.window > 0:
            v_bar = self.v_sum / self.window
            return soft_threshold(v_bar, self.l1 / self.working_l2), self.duals_sum / self.window
        return self.w, self.duals

    def after_check(self, checkpoint):
        if self.averaging:       # a new window (which also never mixes two helper strengths)
            self.duals_sum[:] = 0.0
            self.v_sum[:] = 0.0
            self.window = 0
        if not self.continuation:
            return
        # Pure l1: once the working problem's own gap is below a quarter of working_l2 ||w||^2
        # (the distance to the l1 optimum is then dominated by the helper term, not by
        # optimisation), the helper strength shrinks tenfold; the duals carry over, v and w are
        # rescaled to the new strength (v = X^T(c duals) / (working_l2 n)), until the exact
        # pure-l1 certificate reaches tol.
        if helper_can_shrink(self.problem, checkpoint, self.working_l2):
            factor = 0.1
            self.working_l2 *= factor
            self.v /= factor
            self.w[:] = soft_threshold(self.v, self.l1 / self.working_l2)
            self.run_start = checkpoint.epoch
