"""Prox-SDCA with vector duals (seed 000 Sec. 3.3): the driver of multiclass="crammer_singer"
and "multinomial" around the kernel of _vector.pyx, in the one training loop."""
import numpy as np

from fastdual.solvers import _vector
from fastdual.solvers.common import soft_threshold


class VectorSDCA:
    name = "sdca"
    helper_l2 = 0.0
    REFRESH = 10

    def __init__(self, problem, seed, initial_duals=None):
        self.problem = problem
        self.description = f"multiclass={problem.strategy!r}"
        n, d, k = problem.n_samples, problem.n_features, problem.n_classes
        self.duals = (np.zeros((n, k)) if initial_duals is None
                      else np.array(initial_duals, dtype=np.float64, order="C"))
        self.v = np.zeros((d + 1, k))
        if initial_duals is not None:      # V(duals)
            problem.dual_vector(self.duals, out=self.v)
        self.w = self.v if problem.l1 == 0.0 else soft_threshold(self.v,
                                                                 problem.l1 / problem.l2)
        self.order = np.arange(n, dtype=np.intp)
        self.rng_state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)
        self.scratch = np.zeros((4, k))
        self.sort_order = np.zeros(k, dtype=np.intp)
        # Shrinking (Crammer-Singer, whose duals sit on C's faces): samples whose step leaves
        # them unchanged are skipped; every REFRESH epochs, or when none is left, all return.
        self.shrinking = problem.vector_loss.shrinks
        self.n_active = n
        self.since_refresh = 0

    def epoch(self):
        problem = self.problem
        data, indices, indptr = problem.X.kernel_args
        if self.n_active == 0 or self.since_refresh >= self.REFRESH:
            self.n_active = problem.n_samples
            self.since_refresh = 0
        self.since_refresh += 1
        self.n_active = _vector.vector_epoch(
            data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
            problem.labels, problem.sample_weight, problem.squared_norms(), self.duals, self.v,
            self.w, problem.vector_loss, problem.l2, problem.l1, self.order,
            self.rng_state, self.scratch, self.sort_order, self.n_active, self.shrinking)

    def check_due(self, epoch):
        return None

    def point(self):
        return self.w, self.duals

    def after_check(self, checkpoint):
        pass
