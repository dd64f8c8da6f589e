"""Prox-SDCA with vector duals (seed 000 Sec. 3.3): the driver of multiclass="crammer_singer"
and "multinomial" around the kernel of _vector.pyx, in the one training loop."""
import numpy as np

from fastdual.solvers import _vector, sdca
from fastdual.solvers.common import soft_threshold


class VectorSDCA:
    name = "sdca"
    helper_l2 = 0.0
    # Shrinking (Crammer-Singer): the shrunk problem's violation below which everything is
    # reactivated starts at SHRINK_START and is multiplied by SHRINK_FACTOR at each
    # reactivation, down to SHRINK_FLOOR (LIBLINEAR -s 4 starts at max(10 eps, 1) and halves).
    SHRINK_START = 1.0
    SHRINK_FACTOR = 0.5
    SHRINK_FLOOR = 1e-12
    # A shrunk phase longer than twice the longest so far plus STALL epochs ends as well.
    STALL = 20
    # In a shrunk phase, a certificate only once the epochs since the last one computed
    # CHECK_WORK times its margins (measured on letter, satimage, pendigits and dna: 1 checked
    # up to every 10 epochs where the gap is noisy, 4 waited longer than needed).
    CHECK_WORK = 2.0
    # Groups of identical rows with different labels: at most this many sweeps of a group's
    # block steps a pass (each extrapolated; docs/math.md 4m).
    GROUP_SWEEPS = 64

    def __init__(self, problem, seed, initial_duals=None, shrinking=True):
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
        # Crammer-Singer (whose duals sit on the faces of their domain) runs its own epoch,
        # with LIBLINEAR -s 4's shrinking of (sample, class) variables: each sample's active
        # classes (a permutation of 0..k-1, the active ones first, and the label's position in
        # it), the active samples order[:n_active]; everything returns when the shrunk
        # problem's violation falls below shrink_tol (docs/math.md, "Shrinking classes").
        self.box_duals = problem.vector_loss.shrinks
        self.shrinking = bool(shrinking) and self.box_duals
        if self.box_duals:
            self.scratch = np.zeros((7, k))
            self.index_scratch = np.zeros((2, k), dtype=np.intp)
            self.classes = np.tile(np.arange(k, dtype=np.intc), (n, 1))
            self.n_classes = np.full(n, k, dtype=np.intc)
            self.label_pos = np.asarray(problem.labels, dtype=np.intc).copy()
            self.n_active = n
            self.shrink_tol = self.SHRINK_START
            self.violation = np.inf
            self.full_start = True       # the next epoch starts with everything active
            self.full_pass = False       # the last epoch did
            self.phase = self.longest_phase = 0     # epochs since the last reactivation
            # Margins computed since the last certificate, and what a certificate computes.
            self.work = 0.0
            stored = int(problem.X.indptr[-1]) if problem.X.is_sparse else n * d
            self.certificate_work = float((stored + n) * k)
        else:
            self.scratch = np.zeros((5, k))
        self.sort_order = np.zeros(k, dtype=np.intp)
        # Identical rows with different labels, stepped as blocks (as SDCA's binary driver
        # does, sdca.stiff_groups): looked for at the first check from epoch
        # sdca.GROUP_SEARCH_EPOCH on, where W = V and some c_i ||x_i||^2 / (l2 n) is stiff.
        self.blocks = sdca.GroupSchedule(problem.l1 == 0.0 and float(np.max(
            problem.sample_weight * problem.squared_norms(), initial=0.0))
            / (problem.l2 * n) >= sdca.GROUP_MIN_Q)

    def reactivate(self):
        """Every sample and every class back in the epochs."""
        self.n_active = self.problem.n_samples
        self.n_classes.fill(self.problem.n_classes)
        self.full_start = True

    def epoch(self):
        self._epoch()
        if self.blocks.due():
            problem = self.problem
            moved, gain = _vector.vector_group_steps(
                *problem.X.kernel_args, problem.n_samples, problem.n_features, problem.bias,
                problem.labels, problem.sample_weight, problem.squared_norms(), self.duals,
                self.v, problem.vector_loss, problem.l2, *self.blocks.groups,
                self.group_scratch, self.sort_order, self.GROUP_SWEEPS)
            self.blocks.gain += gain
            if moved and self.box_duals:
                # the moved samples' shrunk classes may no longer sit at zero
                self.reactivate()

    def _epoch(self):
        problem = self.problem
        data, indices, indptr = problem.X.kernel_args
        if not self.box_duals:
            _vector.vector_epoch(
                data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
                problem.labels, problem.sample_weight, problem.squared_norms(), self.duals,
                self.v, self.w, problem.vector_loss, problem.l2, problem.l1, self.order,
                self.rng_state, self.scratch, self.sort_order)
            return
        self.full_pass, self.full_start = self.full_start, False
        self.phase += 1
        self.n_active, self.violation, work = _vector.crammer_singer_epoch(
            data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
            problem.labels, problem.sample_weight, problem.squared_norms(), self.duals, self.v,
            self.w, problem.vector_loss.gamma, problem.l2, problem.l1, self.order,
            self.rng_state, self.scratch, self.index_scratch, self.classes, self.n_classes,
            self.label_pos, self.n_active, self.shrinking)
        self.work += work
        if self.shrinking and (self.violation < self.shrink_tol or self.n_active == 0
                               or self.phase > 2 * self.longest_phase + self.STALL):
            # The shrunk problem is solved to shrink_tol (or stalls above it, e.g. on steps
            # that rounding leaves in place): the next epoch sees everything.
            self.longest_phase = max(self.longest_phase, self.phase)
            self.phase = 0
            self.reactivate()
            self.shrink_tol = max(self.SHRINK_FACTOR * self.shrink_tol, self.SHRINK_FLOOR)

    def check_due(self, epoch):
        """With shrinking, the certificate (a pass over every sample and all k classes) is
        computed after every full pass (the first epoch, and the one after each reactivation:
        LIBLINEAR runs its stopping test on the whole problem likewise), and in a shrunk
        phase when the loop's schedule asks for it, once the epochs since the last check have
        computed CHECK_WORK times as many margins as a certificate does (so that checking
        costs about half as much as training at most, however cheap the shrunk epochs)."""
        if not self.shrinking:
            return None
        if self.full_pass:
            due = True
        elif self.work >= self.CHECK_WORK * self.certificate_work:
            due = None
        else:
            due = False
        return due

    def find_groups(self):
        """sdca.stiff_groups of the class labels, once."""
        problem = self.problem
        self.blocks.found(*sdca.stiff_groups(problem, problem.labels, problem.squared_norms(),
                                             problem.l2))
        groups = self.blocks.groups
        if groups is not None:
            largest = int(np.max(np.diff(groups[1][groups[0]])))
            self.group_scratch = np.zeros((8 + 2 * largest, problem.n_classes))

    def after_check(self, checkpoint):
        if self.box_duals:
            self.work = 0.0
        if self.blocks.checked(checkpoint.dual):
            self.find_groups()

    def point(self):
        return self.w, self.duals
