"""Prox-SDCA (seed 000, Figure 1): the driver around the epoch kernel of _sdca.pyx.

The training loop (fastdual._loop) calls epoch() and point(); the hooks carry what only SDCA has:
shrinking (inside epoch()), the averaging option (check_due / point), the pure-l1 continuation
(after_check), v taken over from the certificate at checks (dual_vector_out / after_check)
and acceleration (class Acceleration: the same kernel on proximal-point subproblems,
docs/math.md "Accelerated Prox-SDCA"). use_threads(n) switches the epochs to the asynchronous
parallel kernel of _sdca_parallel.pyx (PASSCoDe, Atomic or Wild; docs/solvers/sdca.md
"Threads").
"""
import numpy as np

from fastdual._core import rows as _rows
from fastdual._core.losses import BoxQuadratic, new_step_state
from fastdual._core.sampling import alias_table
from fastdual.losses import losses_with
from fastdual.solvers import _sdca, _sdca_intercept, _sdca_parallel
from fastdual.solvers.common import Option, helper_can_shrink, soft_threshold

OPTION_CODES = {"I": 1, "IV": 4}
TINY = np.finfo(float).tiny
NO_SHRINKING = (np.inf, np.inf)   # the shrink thresholds (up, down) that shrink nothing
# v is taken over from the certificate at a check once this many epochs of incremental updates
# have accumulated since the last time (the certificate's pass then sums v with no rounding lost,
# at 25-95 % more of the pass's cost over dense rows and 10-80 % over sparse ones, whose pass
# packs w, v and its rounding side by side; a few epochs' rounding is not worth that).
RESYNC_EPOCHS = 8
# Threads (use_threads): plain additions to v (PASSCoDe-Wild) on sparse data with at least this
# many features, atomic ones otherwise. Two threads lose an update when they add to one entry at
# the same instant: rare when rows are short and features many (the drift measured on news20,
# 62 061 features, was at rounding level), frequent on dense or narrow data, where the lost
# updates slowed convergence 3-35 times on problems of 12 features; an atomic addition (a
# compare-and-swap loop) made an epoch 2-3 times slower on the wide sets (docs/solvers/sdca.md).
WILD_MIN_FEATURES = 10_000
# Threads: the epoch's permutation is cut into this many blocks per thread, handed out one at a
# time (a thread held up by a busy machine or by long rows delays one block, not the epoch).
BLOCKS_PER_THREAD = 16
# Threads on sparse data: the entries of v that most rows write (the features in at least
# HOT_MIN_FRACTION of the rows, at most HOT_MAX of them, the most frequent first; and the
# intercept's entry, always) are replicated per thread and merged every MERGE_EVERY steps,
# instead of being written by every thread at nearly every step (the cache line of such an
# entry then moves between the cores at each step). Finding a row's hot entries costs a test
# per stored entry and a mispredicted branch per hot entry, on one core as on two (measured on
# one core: +3-9 % per epoch on synth_sparse with 5 hot features, +17-32 % with 16, about
# +100 % with 254; +18-20 % on news20 with 5-7, +100-120 % with 254): the set is kept to the
# few features in a large share of the rows. A thread merges every MERGE_EVERY steps: on
# synth_sparse (blocks of ~3000 rows) 512 reached 1e-4 in the fewest epochs and seconds among
# 8, 64, 512 and once per block (logistic, squared hinge; docs/benchmarks.md M).
# docs/solvers/sdca.md "Threads".
HOT_MIN_FRACTION = 0.2
HOT_MAX = 16        # at most _sdca_parallel.COLD_SLOT - 1
MERGE_EVERY = 512
# Threads: an epoch over active rows with fewer stored entries than this runs the sequential
# kernel. Measured on 2 cores with 2 MiB of L2 each (docs/benchmarks.md M): two threads were
# slower than one on every news20 subset up to the whole set (0.4-0.85x at 40 000 to 1.3 M
# stored entries) and on synth_sparse subsets of 0.5 M (0.85x) and 2 M entries (0.97x),
# faster on the whole of it (10 M entries, 1.2-1.4x): on a small epoch one core keeps the
# entries of v the rows touch in its cache, and two threads turn those hits into transfers
# between the cores.
PARALLEL_MIN_NNZ = 3_000_000
# The box conjugate steps (_sdca_intercept.deflated_box_epoch) update their free set, m = v(u)
# and u' grad f from one epoch to the next, and rebuild them from the duals this often (bounding
# the rounding the updates accumulate) and after any other change of the duals.
BOX_REFRESH_EPOCHS = 16
# Whether the box-quadratic losses take those steps where they apply. Off: they take half the
# epochs or fewer on intercept-coupled hinge problems, but an epoch costs 1.1-1.5 times a plain
# one, and over the LIBSVM sets the wall time was not lower (docs/benchmarks.md G2e'''').
BOX_CONJUGATE_STEPS = False
# Duplicated rows with different targets (conflicting_groups, stiff_groups): looked for at the
# first check from epoch GROUP_SEARCH_EPOCH on; a group is stepped as a block if its stiffness
# reaches GROUP_MIN_Q. A group's step costs about GROUP_COST / 10 steps of the epoch (0.75 us
# against 10 ns a row on a9a's one-hot rows, for the hinge, whose jumps take the root finder
# the most steps): with G groups in n rows the pass runs every ceil(GROUP_COST G / n) epochs at
# the most often (a tenth of an epoch's cost or less) while the groups make at least
# GROUP_SHARE of the dual's progress between two checks; else 2, 4, ... times less often, down
# to every GROUP_EVERY_MAX epochs.
GROUP_SEARCH_EPOCH = 8
GROUP_MIN_Q = 32.0
GROUP_COST = 750
GROUP_SHARE = 0.1
GROUP_EVERY_MAX = 64


def identical_rows(matrix):
    """The rows of X (a Matrix) that store the same entries as another row, as (rows, labels):
    rows with one label store the same entries, the labels counting the groups from 0. Found by
    a hash of every row, confirmed entry by entry; computed once per X (Matrix.derived, shared
    by SDCA's duplicate groups and solver="auto"'s Gram floor) and read-only."""
    return matrix.derived(("identical_rows",), lambda: _identical_rows(matrix))


def _identical_rows(matrix):
    n, d = matrix.n_samples, matrix.n_features
    data, indices, indptr = matrix.kernel_args
    hashes = _rows.row_hashes(data, indices, indptr, n, d)
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    segment = np.cumsum(np.r_[True, sorted_hashes[1:] != sorted_hashes[:-1]]) - 1
    shared = np.bincount(segment)[segment] > 1
    rows, segment = order[shared], segment[shared]
    # Each row against the first of its hash; a hash shared by different rows (a collision)
    # is split by the rows' contents.
    first = np.r_[True, segment[1:] != segment[:-1]]
    refs = rows[np.maximum.accumulate(np.where(first, np.arange(rows.size), 0))]
    same = _rows.same_rows(data, indices, indptr, d, rows, refs)
    collided = np.isin(segment, segment[~same])
    rows_list, labels_list = [rows[~collided]], [segment[~collided]]
    label = int(segment.max()) + 1 if segment.size else 0
    for value in np.unique(segment[collided]).tolist():
        candidates = rows[segment == value]
        while candidates.size > 1:
            same = _rows.same_rows(data, indices, indptr, d, candidates,
                                   np.full(candidates.size, candidates[0], dtype=np.intp))
            rows_list.append(candidates[same])
            labels_list.append(np.full(int(same.sum()), label))
            label += 1
            candidates = candidates[~same]
    rows, labels = np.concatenate(rows_list), np.concatenate(labels_list)
    # (a row whose hash partners all turned out different is a group of one: dropped)
    keep = np.bincount(labels)[labels] > 1 if labels.size else labels.astype(bool)
    _, labels = np.unique(labels[keep], return_inverse=True)
    rows, labels = rows[keep].astype(np.intp), labels.reshape(-1).astype(np.intp)
    rows.setflags(write=False)
    labels.setflags(write=False)
    return rows, labels


def conflicting_groups(problem, targets=None):
    """The groups of identical rows whose targets differ, as (group_ptr, run_ptr, members):
    group g is the runs group_ptr[g] .. group_ptr[g + 1] - 1, run r the samples
    members[run_ptr[r]:run_ptr[r + 1]] of one target (in increasing order of sample). The
    identical rows are identical_rows'; empty if there are none. Such samples pull
    v in opposite directions along one row, where coordinate steps crawl: the SDCA drivers
    step each group as a block (_sdca.group_steps, _vector.vector_group_steps;
    docs/solvers/sdca.md "Duplicated rows"). targets: the samples' targets (default problem.y;
    the class indices for the k-class problems)."""
    rows, labels = identical_rows(problem.X)
    # Sorted by group, target, sample; the groups whose targets differ kept.
    targets = (problem.y if targets is None else np.asarray(targets))[rows]
    sort = np.lexsort((rows, targets, labels))
    rows, labels, targets = rows[sort], labels[sort], targets[sort]
    starts = np.r_[True, labels[1:] != labels[:-1]] if rows.size else np.empty(0, bool)
    ends = np.r_[starts[1:], True] if rows.size else starts
    differ = targets[starts] < targets[ends]
    keep = differ[np.cumsum(starts) - 1] if rows.size else starts
    members, labels, targets = rows[keep].astype(np.intp), labels[keep], targets[keep]
    new_group = np.r_[True, labels[1:] != labels[:-1]] if members.size else keep[:0]
    new_run = new_group | np.r_[True, targets[1:] != targets[:-1]] if members.size else keep[:0]
    run_ptr = np.r_[np.flatnonzero(new_run), members.size].astype(np.intp)
    group_ptr = np.r_[np.flatnonzero(new_group[new_run]), run_ptr.size - 1].astype(np.intp)
    return group_ptr, run_ptr, members


def run_weights(problem, group_ptr, run_ptr, members):
    """The sum of the sample weights of each run of a group (_sdca.group_steps' run_weight)."""
    if not members.size:
        return np.zeros(0)
    return np.add.reduceat(problem.sample_weight[members], run_ptr[:-1]).astype(np.float64)


def stiff_groups(problem, targets, sq_norms, l2):
    """(groups, base): conflicting_groups' groups that coordinate steps would crawl on (None if
    there are none) and the epochs between two of their block passes at the most often.

    Coordinate steps move a group's duals along the direction that keeps u = sum_j c_j a_j by
    about 1 / (c q) an epoch (c the larger weight of a target's samples, the smaller over the
    targets; q = ||x||^2 / (l2 n)): a hinge pair needs about c q / 2 epochs to reach its
    bounds. Groups with c q < GROUP_MIN_Q get there within the epochs SDCA runs anyway, and are
    left to it (on a9a's 1061 one-hot groups at C = 1, c q = 15, their block steps made epochs
    30 % dearer and saved none). The pass over G groups in n rows runs every
    ceil(GROUP_COST G / n) epochs at the most often."""
    group_ptr, run_ptr, members = conflicting_groups(problem, targets)
    if not members.size:
        return None, 1
    run_weight = np.maximum.reduceat(problem.sample_weight[members], run_ptr[:-1])
    stiffness = (np.minimum.reduceat(run_weight, group_ptr[:-1])
                 * sq_norms[members[run_ptr[group_ptr[:-1]]]] / (l2 * problem.n_samples))
    keep = np.flatnonzero(stiffness >= GROUP_MIN_Q)
    if not keep.size:
        return None, 1
    runs = [np.arange(group_ptr[g], group_ptr[g + 1]) for g in keep.tolist()]
    run_sizes = np.diff(run_ptr)
    kept_runs = np.concatenate(runs)
    members = np.concatenate([members[run_ptr[r]:run_ptr[r + 1]] for r in kept_runs.tolist()])
    run_ptr = np.r_[0, np.cumsum(run_sizes[kept_runs])].astype(np.intp)
    group_ptr = np.r_[0, np.cumsum([r.size for r in runs])].astype(np.intp)
    base = max(1, int(np.ceil(GROUP_COST * keep.size / problem.n_samples)))
    return (group_ptr, run_ptr, members.astype(np.intp)), base


class GroupSchedule:
    """When the SDCA drivers (binary and k-class) look for stiff_groups and run their block
    steps: the search at the first check from epoch GROUP_SEARCH_EPOCH on (`search`: whether the
    driver can step groups at all; a run that converges before pays nothing for it); then a
    pass every `every` epochs, `base` (stiff_groups') while the groups make at least
    GROUP_SHARE of the dual's progress between two checks, else 2, 4, ... times less often,
    down to every GROUP_EVERY_MAX epochs."""

    def __init__(self, search):
        self.search = bool(search)
        self.groups = None
        self.base = self.every = 1
        self.clock = 0
        self.gain = 0.0             # the passes' dual increase since the last check
        self.last_dual = None

    def due(self):
        """An epoch ended: whether the groups' pass runs now."""
        self.clock += 1
        return self.groups is not None and self.clock % self.every == 0

    def found(self, groups, base):
        """stiff_groups' answer (groups None: there are none); the search is over."""
        self.search = False
        self.groups, self.base, self.every = groups, base, base

    def checked(self, dual):
        """After a check at dual objective `dual`: whether the driver should search now; else
        the pass's interval for the next epochs."""
        if self.search and self.clock >= GROUP_SEARCH_EPOCH:
            return True
        if self.groups is not None:
            if self.last_dual is not None:
                pays = self.gain >= GROUP_SHARE * (dual - self.last_dual)
                self.every = self.base if pays else min(2 * self.every, GROUP_EVERY_MAX)
            self.last_dual = dual
            self.gain = 0.0
        return False


class SDCA:
    name = "sdca"
    # Its certified gap spikes above a falling trend (w(alpha) of the last epoch on hinge-type
    # losses): far from tol, a check whose gap did not fall keeps the spacing of the last two
    # (_loop.CheckSchedule). The stochastic primal methods (SPDC, RDA), whose gaps hover, reach
    # tol by checking often and keep the next-epoch rule.
    keeps_check_spacing = True
    # the loss capabilities it trains (fastdual.losses): any per-sample loss
    needs = frozenset({"per_sample"})
    pure_l1 = True
    free_intercept = True       # l1 = 0 only (class FreeIntercept)
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
        "acceleration": Option(False, kind=bool,
                               help="accelerated Prox-SDCA: an outer loop of proximal-point "
                                    "subproblems, each solved by the SDCA kernel warm-started, "
                                    "for small alpha (l2 > 0)"),
    }

    def __init__(self, problem, options, seed, initial_duals=None):
        self.problem = problem
        n, d = problem.n_samples, problem.n_features
        self.option = OPTION_CODES[options["sdca_option"]]
        self.weighted = options["sampling"] == "weighted"
        self.with_replacement = options["sampling"] in ("uniform", "weighted")
        self.averaging = options["output"] == "average"
        self.shrinking = options["shrinking"]
        self.acceleration = None

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
            problem.dual_vector(self.duals, l2=self.working_l2, out=self.v)
        # With l1 = 0, w = v: the kernel gets the same array twice and never writes w.
        self.w = self.v if self.l1 == 0.0 else soft_threshold(self.v, self.l1 / self.working_l2)
        self.sq_norms = problem.squared_norms()
        self.weighted_sq_norm_max = float(np.max(problem.sample_weight * self.sq_norms))
        self.order = np.arange(n, dtype=np.intp)
        # The loss's step state (the logistic step's kept logits, losses.pxd logistic_step): a
        # start for each sample's next step, trusted only while its dual is the one it was kept
        # for.
        self.step_state = new_step_state(problem.loss, n)
        self._set_sampling()
        self.rng_state = np.random.SeedSequence(seed).generate_state(4, dtype=np.uint64)

        # Shrinking (LIBLINEAR's, see _sdca.pyx): the thresholds (up, down) are the previous
        # epoch's largest projected slopes each way. When the active set is solved to
        # unshrink_tol (a tenth of the first epoch's largest slope, then a tenth of that each
        # time), everyone comes back for the next epoch.
        self.n_active = n
        self.shrink_thresholds = NO_SHRINKING
        self.unshrink_tol = None
        self.visited = 0        # rows the epochs visited since the last check (check_due)

        # Averaging option of Figure 1 over the latter half of the run: epoch-end snapshots summed
        # over the window since the previous check, checks at powers of two, so that at
        # E = 2^k the average covers exactly epochs 2^(k-1)+1 .. 2^k. A pure-l1 continuation
        # step starts a new run (a new working problem): E counts from its start.
        self.duals_sum = np.zeros(n) if self.averaging else None
        self.v_sum = np.zeros(d + 1) if self.averaging else None
        self.window = 0
        self.run_start = 0
        self.intercept = None
        if problem.free_intercept:
            self.intercept = FreeIntercept(self, options)
        if options["acceleration"]:
            if self.continuation:
                raise ValueError("acceleration=True needs an l2 term (l1_ratio < 1): the "
                                 "accelerated outer loop's rate comes from the l2 strength")
            if problem.loss.gamma == 0.0:
                hint = ("; smooth_hinge with a small gamma is the smoothed hinge"
                        if problem.loss_name == "hinge" else "")
                smooth = ", ".join(losses_with({"per_sample", "smooth"}))
                raise ValueError(f"acceleration=True needs a smooth loss ({smooth}): its outer "
                                 "loop's rate comes from the loss's smoothness" + hint)
            if self.averaging:
                raise ValueError("acceleration=True returns the outer loop's iterates; it "
                                 "cannot be combined with output='average'")
            self.acceleration = Acceleration.plan(self)
            if self.acceleration is not None:
                self.shrinking = False   # short inner solves of changing subproblems
        # The kernel updates v by c_i da_i x_i / (l2 n) step after step, and the rounding of
        # those updates adds up over a long run; the certificate recomputes v(duals) from the
        # duals in its own pass at each check. Where that is this driver's v (the point
        # certified is the kernel's own, at the working l2 = the objective's l2, with no
        # intercept centre in the last entry), it is taken over at a check (docs/math.md Sec.
        # 4, "v taken over from the certificate"), without a pass of its own.
        self.n_threads = 1      # use_threads: the parallel kernel's threads (1: _sdca.pyx)
        self.atomic = True      # the parallel kernel's additions to v (WILD_MIN_FEATURES)
        self.drifting = False   # v may have lost updates since it was last recomputed
        self.order_scratch = None
        self.hot_features = np.empty(0, dtype=np.intp)   # _set_hot: v's replicated entries
        self.row_nnz = None
        self.resync = not (self.continuation or self.averaging or self.intercept is not None
                           or self.acceleration is not None)
        self.certified_v = None
        self.epochs_since_resync = 0
        # Identical rows with different targets, stepped as blocks after the epochs (where w = v
        # at the objective's own l2: no l1, no free intercept's centre, no proximal subproblem).
        # They are looked for at the first check from epoch GROUP_SEARCH_EPOCH on (a run that
        # converges before pays nothing for the search); none can be stiff where every
        # c_i ||x_i||^2 / (l2 n) is below GROUP_MIN_Q.
        self.blocks = GroupSchedule(self.l1 == 0.0 and not self.continuation
                                    and self.intercept is None and self.acceleration is None
                                    and self.weighted_sq_norm_max / (self.working_l2 * n)
                                    >= GROUP_MIN_Q)
        # The squared loss with LIBLINEAR's intercept: every step along e_i - gamma_i u,
        # conjugate to the intercept's direction u (_sdca_intercept.deflated_squared_epoch;
        # docs/solvers/sdca.md, "The intercept's direction"), exact steps (Option I), the
        # sequential kernel's permutations; m = v(u) and p = X~ m at its first epoch.
        self.deflates = (problem.loss_name == "squared" and problem.bias != 0.0
                         and self.l1 == 0.0 and not self.continuation and self.intercept is None
                         and not self.averaging and self.acceleration is None
                         and self.option == OPTION_CODES["I"] and not self.with_replacement)
        self.deflation = None
        # The box-quadratic losses with LIBLINEAR's intercept: conjugate steps on the free duals
        # (_sdca_intercept.deflated_box_epoch; docs/solvers/sdca.md, "... on a box").
        self.deflates_box = (isinstance(problem.loss, BoxQuadratic) and problem.bias != 0.0
                             and self.l1 == 0.0 and not self.continuation
                             and self.intercept is None and not self.averaging
                             and self.acceleration is None and not self.weighted
                             and self.option == OPTION_CODES["I"] and not self.with_replacement
                             and BOX_CONJUGATE_STEPS)
        self.box_work = None
        self.box_refresh = 0

    def _deflation(self):
        """The conjugate steps' constants, computed once (two passes over the rows): m = v(u),
        p = X~ m, per sample gamma_i = (Qu)_i / u'Qu and 1 / (Q_ii - (Qu)_i^2 / u'Qu) (0 where
        that curvature is not above 1e-12 Q_ii: the row is u's direction), and u'Qu."""
        if self.deflation is None:
            problem, n, d = self.problem, self.problem.n_samples, self.problem.n_features
            c = problem.sample_weight
            u = (c > 0.0).astype(np.float64)
            m = problem.dual_vector(u, l2=self.working_l2)
            p = problem.X.matvec(m[:d]) + problem.bias * m[d]
            u_q_u = float(np.sum(c)) / n + self.working_l2 * float(m @ m)
            q_ii = c / n * (1.0 + c * self.sq_norms / (self.working_l2 * n))
            q_u = c / n * (1.0 + p)
            gamma = q_u / u_q_u if u_q_u > 0.0 else np.zeros(n)
            curvature = q_ii - q_u * gamma
            with np.errstate(divide="ignore"):
                inv_curvature = np.where(curvature > 1e-12 * q_ii, 1.0 / curvature, 0.0)
            slots = _sdca_intercept.sample_slots(c, problem.y, p, gamma, inv_curvature)
            self.deflation = (m, slots, u_q_u)
        return self.deflation

    def use_threads(self, n_jobs):
        """Run the epochs on n_jobs threads (asynchronous parallel dual coordinate ascent,
        _sdca_parallel.pyx); 1 keeps the sequential kernel. Each thread owns a block of the
        epoch's permutation, so draws with replacement do not combine with it."""
        if n_jobs > 1 and self.with_replacement:
            sampling = "weighted" if self.weighted else "uniform"
            raise ValueError(f"n_jobs={n_jobs} runs SDCA's epochs over a permutation split "
                             f"between threads; sampling={sampling!r} draws with replacement: "
                             "give sampling='permutation' or n_jobs=1")
        self.n_threads = n_jobs if _sdca_parallel.OPENMP else 1
        self.atomic = not (self.problem.X.is_sparse
                           and self.problem.n_features >= WILD_MIN_FEATURES)
        self.order_scratch = None      # (the replicas' work space is sized by n_threads)

    def _threads_ready(self):
        """The threads' work space and hot entries, made by the first epoch that may run
        threaded: data whose stored entries are below PARALLEL_MIN_NNZ never pays for them (a
        count over the column indices: 6-14 ms, 10 % of a news20 fit)."""
        if self.order_scratch is None:
            self.order_scratch = np.empty(self.problem.n_samples, dtype=np.intp)
            self._set_hot()

    def _set_hot(self):
        """The hot entries of v (HOT_MIN_FRACTION, HOT_MAX) and the threads' work space for
        their replicas (_sdca_parallel.pyx). Sparse data only (a dense row writes every entry:
        the kernel's atomic additions stay), counted once from the column indices."""
        problem = self.problem
        X, d = problem.X, problem.n_features
        self.row_nnz = None
        features = np.empty(0, dtype=np.intp)
        if X.is_sparse:
            self.row_nnz = np.diff(X.indptr)
            counts = np.bincount(X.indices[:X.indptr[-1]], minlength=d)
            frequent = np.flatnonzero(counts >= max(HOT_MIN_FRACTION * problem.n_samples, 1))
            features = frequent[np.argsort(-counts[frequent], kind="stable")[:HOT_MAX]]
        features = np.sort(features).astype(np.intp)
        entries = features
        if problem.bias != 0.0:
            entries = np.append(entries, d)
        # hot_features: the entries replicated (the intercept's, d, too when it is)
        self.hot_features = entries
        self.hot_slot = np.full(d, _sdca_parallel.COLD_SLOT, dtype=np.uint8)
        self.hot_slot[features] = np.arange(features.size)
        self.hot_bits = np.zeros((d + 63) // 64, dtype=np.uint64)
        np.bitwise_or.at(self.hot_bits, features // 64,
                         np.left_shift(np.uint64(1), (features % 64).astype(np.uint64)))
        self.replicas = np.zeros((self.n_threads + 1)
                                 * _sdca_parallel.replica_stride(entries.size))

    def _stored_entries(self):
        """Stored entries of all rows (n_features each for dense data)."""
        problem = self.problem
        if problem.X.is_sparse:
            return int(problem.X.indptr[-1])
        return problem.n_samples * problem.n_features

    def _active_nnz(self):
        """Stored entries of the active rows (the work of the next epoch); all rows for dense
        data count n_features each."""
        n = self.problem.n_samples
        if self.row_nnz is None:
            return self.n_active * self.problem.n_features
        if self.n_active == n:
            return int(self.problem.X.indptr[n])
        return int(np.sum(self.row_nnz[self.order[:self.n_active]]))

    def _repair(self):
        """v's features' entries recomputed from the duals (one transpose pass), w from them:
        the parallel kernel's plain additions may have lost updates (_sdca_parallel.pyx). The
        intercept feature's entry, added to atomically, holds what the drivers put there (a
        free intercept's centre), so it is kept."""
        d = self.problem.n_features
        exact = self.problem.dual_vector(self.duals, l2=self.working_l2, feasible=True)
        self.v[:d] = exact[:d]
        self._box_v_taken_over()
        if self.l1 > 0.0:
            self.w[:] = soft_threshold(self.v, self.l1 / self.working_l2)
        self.drifting = False

    def _box_v_taken_over(self):
        """v = v(duals) anew: the box steps' carries (what v held beyond the stored duals) are
        gone with the old v."""
        if self.box_work is not None:
            self.box_work[-1][:] = 0.0

    def start_from(self, w):
        """A warm start's coefficients: with a free intercept its weight is the first centre
        (the duals alone, on sum_i c_i a_i = 0, carry no intercept); otherwise unused."""
        if self.intercept is not None:
            self.intercept.start_from(w[self.problem.n_features])

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
        self.epochs_since_resync += 1
        self._sdca_epoch()
        if self.acceleration is not None:
            self.acceleration.after_epoch()
        if self.intercept is not None:
            self.intercept.after_epoch()

    def _sdca_epoch(self):
        problem = self.problem
        self.visited += problem.n_samples if self.with_replacement else self.n_active
        data, indices, indptr = problem.X.kernel_args
        q_max = self.weighted_sq_norm_max / (self.working_l2 * problem.n_samples)
        threads = min(self.n_threads, self.n_active)
        if threads > 1 and self._stored_entries() < PARALLEL_MIN_NNZ:
            threads = 1                  # (below the cutoff however many rows are active)
        if threads > 1:
            self._threads_ready()
            if self._active_nnz() < PARALLEL_MIN_NNZ:
                threads = 1
        if threads > 1:
            max_up, max_down, self.n_active = _sdca_parallel.sdca_parallel_epoch(
                data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
                problem.y, problem.sample_weight, self.sq_norms, self.duals, self.v, self.w,
                problem.loss, self.working_l2, self.l1, self.option, q_max, self.order,
                self.rng_state, self.n_active,
                *self._thresholds(), threads,
                min(threads * BLOCKS_PER_THREAD, self.n_active), self.order_scratch,
                self.atomic, self.hot_features, self.hot_slot, self.hot_bits, self.replicas,
                MERGE_EVERY, self.step_state)
            # Atomic: v = v(duals) up to rounding, as after a sequential epoch.
            self.drifting = self.drifting or not self.atomic
            self.box_refresh = 0     # (the box steps' free set is rebuilt from these duals)
        else:
            max_up, max_down, self.n_active = self._sequential_epoch(data, indices, indptr,
                                                                     q_max)
        if self.blocks.due():
            _, gain = _sdca.group_steps(data, indices, indptr, problem.n_samples,
                                        problem.n_features, problem.bias, problem.y,
                                        problem.sample_weight, self.sq_norms, self.duals,
                                        self.v, problem.loss, self.working_l2,
                                        *self.blocks.groups, self.run_weight)
            self.blocks.gain += gain
            self.box_refresh = 0     # duals moved outside the conjugate steps' bookkeeping
        self._after_kernel(max_up, max_down)

    def _thresholds(self):
        return self.shrink_thresholds if self.shrinking else NO_SHRINKING

    def _sequential_epoch(self, data, indices, indptr, q_max):
        problem = self.problem
        if self.deflates and self.n_active == problem.n_samples and self._deflation()[-1] > 0.0:
            _sdca_intercept.deflated_squared_epoch(
                data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
                self.duals, self.v, *self.deflation, self.working_l2, self.order,
                self.rng_state)
            return 0.0, 0.0, problem.n_samples
        if self.deflates_box:
            if self.box_work is None:
                n, d = problem.n_samples, problem.n_features
                self.box_work = (np.zeros(d + 1), np.zeros(4), np.zeros(n, dtype=np.intp),
                                 np.zeros(n, dtype=np.intp), np.zeros(n, dtype=np.uint8),
                                 np.zeros(d + 1, dtype=np.intp), np.zeros(d + 1, dtype=np.uint8),
                                 np.zeros(n))
            refresh = self.box_refresh == 0
            self.box_refresh = (self.box_refresh + 1) % BOX_REFRESH_EPOCHS
            return _sdca_intercept.deflated_box_epoch(
                data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
                problem.y, problem.sample_weight, self.sq_norms, self.duals, self.v,
                problem.loss, self.working_l2, self.order, self.rng_state, self.n_active,
                *self._thresholds(), *self.box_work, refresh)
        return _sdca.sdca_epoch(
            data, indices, indptr, problem.n_samples, problem.n_features, problem.bias,
            problem.y, problem.sample_weight, self.sq_norms, self.duals, self.v, self.w,
            problem.loss, self.working_l2, self.l1, self.option, q_max, self.with_replacement,
            self.order, self.rng_state, self.n_active,
            *self._thresholds(), self.alias_keep, self.alias, self.step_state)

    def _after_kernel(self, max_up, max_down):
        problem = self.problem
        max_slope = max(max_up, max_down)
        if self.unshrink_tol is None:
            self.unshrink_tol = 0.1 * max_slope
        # (no push either way: nothing is shrunk that way, LIBLINEAR's PGmax_old = INF)
        self.shrink_thresholds = (max_up if max_up > 0 else np.inf,
                                  max_down if max_down > 0 else np.inf)
        if self.n_active < problem.n_samples and max_slope <= self.unshrink_tol:
            self.n_active = problem.n_samples
            self.shrink_thresholds = NO_SHRINKING
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

    def check_work(self):
        """The rows the epochs since the last check visited, in unshrunk epochs (n rows): the
        adaptive schedule waits for one before a certificate (a pass over every row), so that
        checks cost about what training does at most, however few rows shrunk epochs visit."""
        return self.visited / max(self.problem.n_samples, 1)

    def point(self):
        # Threads (Wild): v recomputed from the duals before it is certified where the
        # certificate's v is not this driver's (not resync); where it is, the check's own pass
        # sums v(duals) and after_check takes it over (dual_vector_out). The acceleration's v
        # is recomputed after every epoch already: Acceleration.after_epoch.
        if self.acceleration is not None:
            return self.acceleration.point()
        if self.drifting and not self.resync:
            self._repair()
        if self.averaging and self.window > 0:
            duals_bar = self.duals_sum / self.window
            if self.n_threads > 1 and not self.atomic:   # Wild: v of the average duals
                # summed from them, not the average of the drifting v
                v_bar = self.problem.dual_vector(duals_bar, l2=self.working_l2)
            else:
                v_bar = self.v_sum / self.window
            return soft_threshold(v_bar, self.l1 / self.working_l2), duals_bar
        return self.w, self.duals

    def dual_vector_out(self):
        """Where the certificate writes v(duals) at this check, to be taken over in
        after_check; None when the certificate's v is not this driver's or when fewer than
        RESYNC_EPOCHS epochs have passed since it was last taken over, unless the threads'
        plain additions may have lost updates since (Wild): the certificate's pass then
        repairs v at no cost of its own, where a repair before the check was one more pass
        (the point certified is the kernel's w with the duals, a valid pair as any other)."""
        if not self.resync or (self.epochs_since_resync < RESYNC_EPOCHS
                               and not self.drifting):
            return None
        self.certified_v = np.empty_like(self.v)
        return self.certified_v

    def find_groups(self):
        """Look for the stiff groups of stiff_groups once; their block steps start with the
        next epoch (GroupSchedule)."""
        self.blocks.found(*stiff_groups(self.problem, self.problem.y, self.sq_norms,
                                        self.working_l2))
        if self.blocks.groups is not None:
            self.run_weight = run_weights(self.problem, *self.blocks.groups)

    def after_check(self, checkpoint):
        self.visited = 0
        if self.blocks.checked(checkpoint.dual):
            self.find_groups()
        if self.certified_v is not None:   # v(duals) as the certificate summed it: no drift
            self.v, self.certified_v = self.certified_v, None
            self.epochs_since_resync = 0
            self.drifting = False
            self._box_v_taken_over()
            if self.l1 == 0.0:
                self.w = self.v
            else:
                self.w[:] = soft_threshold(self.v, self.l1 / self.working_l2)
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


class Acceleration:
    """Accelerated Prox-SDCA (Shalev-Shwartz & Zhang's outer loop, Catalyst-style), for
    l2 = lam > 0 well below R^2 / (gamma n). With kappa = R^2 / (gamma n) - lam, outer step t
    solves the proximal-point subproblem

        P_t(w) = P(w) + kappa/2 ||w - y_t||^2

    with the SDCA kernel at working l2 lam + kappa, warm-started from the previous duals, until
    the subproblem's own duality gap is below eta / (2 (1 + eta^-2)) xi_t; then
    y_{t+1} = w_t + beta (w_t - w_{t-1}), xi_{t+1} = (1 - eta/2) xi_t, with mu = lam/2,
    eta = sqrt(mu / (mu + kappa)), beta = (1 - eta) / (1 + eta).

    The kernel needs no change: P_t's regulariser is (lam + kappa) (1/2 ||w - u||^2 + tau ||w||_1)
    plus a constant, u = kappa y_t / (lam + kappa), and grad g*(v) = soft(v + u, tau), so the
    kernel's v array holds v(duals) + u. docs/math.md "Accelerated Prox-SDCA" has the
    subproblem's dual. Every epoch is one SDCA pass and one certificate pass for the
    subproblem (which also refreshes v from the duals). The user's certificate is computed at
    the subproblem's primal iterate, with the better of the carried duals and the duals of its
    margins.
    """

    MIN_RATIO = 10.0    # accelerate only when R^2 / (gamma n) > MIN_RATIO lam

    def __init__(self, sdca, kappa):
        problem = sdca.problem
        self.sdca = sdca
        self.lam = problem.l2
        self.kappa = kappa
        self.working_l2 = self.lam + kappa
        mu = 0.5 * self.lam
        self.eta = np.sqrt(mu / (mu + kappa))
        self.beta = (1.0 - self.eta) / (1.0 + self.eta)
        self.tau = problem.l1 / self.working_l2
        d1 = problem.n_features + 1
        self.v_duals = np.empty(d1)         # v(duals) at the working l2, refreshed each epoch
        # The kernel runs at the working l2 from duals carried over: v(duals) rescaled.
        # y_1 = w_0 = the user problem's w(duals) (0 from zero duals), xi_1 = (1 + eta^-2)
        # times its gap.
        sdca.working_l2 = self.working_l2
        problem.dual_vector(sdca.duals, l2=self.working_l2, out=self.v_duals)
        self.y = soft_threshold(self.v_duals * (self.working_l2 / self.lam), problem.l1 / self.lam)
        self.u = (kappa / self.working_l2) * self.y
        self.w_prev = self.y.copy()
        sdca.v[:] = self.v_duals + self.u
        self._set_w()
        self.report_w = sdca.w
        self.y_norm2 = float(self.y @ self.y)   # ||y_t||^2, kept until y moves
        p0, d0 = problem.primal_dual(self.y, sdca.duals)
        self.xi = (1.0 + self.eta ** -2) * max(p0 - d0, TINY)
        self.outer_steps = 0
        self.inner_epochs = 0
        self.restarts = 0
        self.last_objective = p0

    @classmethod
    def plan(cls, sdca):
        """The acceleration for this problem, or None when lam is large enough that plain
        SDCA is as fast (R^2 / (gamma n) <= MIN_RATIO lam)."""
        problem = sdca.problem
        gamma = problem.loss.gamma          # the loss is 1/gamma-smooth
        radius2 = sdca.weighted_sq_norm_max
        scale = radius2 / (gamma * problem.n_samples)
        if not scale > cls.MIN_RATIO * problem.l2:
            return None
        return cls(sdca, scale - problem.l2)

    def _set_w(self):
        sdca = self.sdca
        if self.tau == 0.0:
            sdca.w = sdca.v          # the kernel gets the same array twice, as in plain SDCA
        else:
            sdca.w = soft_threshold(sdca.v, self.tau)

    def subproblem_values(self):
        """(P_t(w), D_t(duals)) for the kernel's w and duals; writes v(duals) to v_duals and
        refreshes the kernel's v to v(duals) + u (no drift across outer steps) and its w.

        Four passes over d-vectors besides the certificate's (w.y, v(duals) + u and, with
        tau = 0, the two squared norms; ||y||^2 is kept from the outer step): on very wide
        data these, not the kernel's epoch, are the cost of an epoch."""
        problem, sdca = self.sdca.problem, self.sdca
        w, kappa, l2w = sdca.w, self.kappa, self.working_l2
        primal, dual = problem.primal_dual(w, sdca.duals, l2=l2w, v_out=self.v_duals)
        w_y = float(w @ self.y)     # before the refresh below (w is the kernel's v if tau = 0)
        np.add(self.v_duals, self.u, out=sdca.v)
        self._set_w()
        # primal_dual gives P' = L + l2w/2 ||w||^2 + l1 ||w||_1 and D' = -conj - l2w g0*(v):
        # P_t = P' - kappa w.y + kappa/2 ||y||^2 and
        # D_t = D' + l2w (g0*(v) - g0*(v + u)) + kappa/2 ||y||^2 (docs/math.md), with
        # 2 g0*(x) = ||max(|x| - tau, 0)||^2 (with tau = 0 the same products as ||x||^2).
        if self.tau == 0.0:
            excess2 = float(self.v_duals @ self.v_duals)
            shifted2 = float(sdca.v @ sdca.v)
        else:
            excess = np.maximum(np.abs(self.v_duals) - self.tau, 0.0)
            excess2 = float(excess @ excess)
            np.abs(sdca.v, out=excess)
            excess -= self.tau
            np.maximum(excess, 0.0, out=excess)
            shifted2 = float(excess @ excess)
        constant = 0.5 * kappa * self.y_norm2
        return (primal - kappa * w_y + constant,
                dual + 0.5 * l2w * (excess2 - shifted2) + constant)

    def after_epoch(self):
        sdca = self.sdca
        self.inner_epochs += 1
        primal, dual = self.subproblem_values()
        gap = primal - dual
        self.report_w = sdca.w
        if gap > self.eta / (2.0 * (1.0 + self.eta ** -2)) * self.xi:
            return
        # The subproblem is solved: the outer step, with momentum unless the user's objective
        # P(w_t) = P_t(w_t) - kappa/2 ||w_t - y_t||^2 went up (an adaptive restart, as
        # O'Donoghue & Candes: the momentum overshot; start again from w_t).
        w_t = sdca.w.copy()
        self.report_w = w_t
        objective = primal - 0.5 * self.kappa * float(np.sum((w_t - self.y) ** 2))
        if objective > self.last_objective:
            self.y = w_t
            self.restarts += 1
        else:
            self.y = w_t + self.beta * (w_t - self.w_prev)
        self.last_objective = objective
        self.w_prev = w_t
        self.xi *= 1.0 - 0.5 * self.eta
        self.y_norm2 = float(self.y @ self.y)
        self.u = (self.kappa / self.working_l2) * self.y
        sdca.v[:] = self.v_duals + self.u
        self._set_w()
        self.outer_steps += 1

    def point(self):
        """The subproblem's primal iterate, with the best certificate among the carried duals
        and the duals of its margins, each scaled by the s in [0, 1] that maximises the user's
        dual along the ray (docs/math.md): early on, v(duals) = X^T(c a) / (lam n) is far
        larger at the user's small lam than at the working lam + kappa, and a shorter dual
        point certifies much more."""
        problem, w = self.sdca.problem, self.report_w
        candidates = [(self.sdca.duals, self.v_duals * (self.working_l2 / self.lam))]
        v_margins = np.empty(problem.n_features + 1)
        margin_duals = problem.duals_from_margins(w)
        problem.primal_dual(w, margin_duals, v_out=v_margins)
        candidates.append((margin_duals, v_margins))
        best_value, best_duals = -np.inf, None
        for duals, v in candidates:
            scale, value = best_dual_scale(problem, duals, v)
            if value > best_value:
                best_value, best_duals = value, scale * duals
        return w, best_duals


def best_dual_scale(problem, duals, v):
    """(s, D(s duals)) maximising the user's dual over s in [0, 1], given v = v(duals) at the
    problem's l2 (> 0). D(s a) = (1/n) sum_i c_i (-phi*(-s a_i)) - l2 g*(s v) is concave in s
    and s a is feasible for every s in [0, 1] (0 is in every loss's dual domain): a golden-
    section search, O(n) per evaluation, no pass over X."""
    c, y, loss = problem.sample_weight, problem.y, problem.loss
    kept = c > 0.0
    c, y, duals = c[kept], y[kept], duals[kept]
    n, l2 = problem.n_samples, problem.l2
    penalty = scaled_penalty(v, problem.l1 / l2)

    def value(s):
        return float(c @ loss.dual_values(y, s * duals)) / n - 0.5 * l2 * penalty(s)

    return golden_section_max(value)


def golden_section_max(value, iterations=60):
    """(s, value(s)) for the best of 1, 0 and the point a golden-section search for the
    maximum of a concave value on [0, 1] ends at (its interval shrinks 0.618-fold an
    iteration; one evaluation each)."""
    ratio = 0.5 * (np.sqrt(5.0) - 1.0)
    lo, hi = 0.0, 1.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = value(a), value(b)
    for _ in range(iterations):
        if fa >= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = value(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = value(b)
    return max(((s, value(s)) for s in (1.0, 0.5 * (lo + hi), 0.0)), key=lambda t: t[1])


def scaled_penalty(v, kappa):
    """The function s -> ||max(s |v| - kappa, 0)||^2 on [0, 1] (twice g0*(s v), g0's threshold
    kappa), from at most one pass over v and a sort of the entries above kappa, so that each value the scaling
    search asks for costs O(log d) rather than passes over a d-vector. It is piecewise
    quadratic: s^2 S2(s) - 2 s kappa S1(s) + kappa^2 K(s), over the K(s) entries with
    |v_j| > kappa / s (S1, S2 their sums and sums of squares, prefix sums of the sorted
    entries)."""
    if kappa == 0.0:
        total = float(v @ v)
        return lambda s: s * s * total
    top = np.abs(v)
    top = np.sort(top[top > kappa])            # ascending; the only entries s <= 1 reaches
    sums = np.concatenate(([0.0], np.cumsum(top[::-1])))
    squares = np.concatenate(([0.0], np.cumsum(top[::-1] ** 2)))
    size = top.shape[0]

    def penalty(s):
        if s <= 0.0:
            return 0.0
        k = size - int(np.searchsorted(top, kappa / s, side="right"))
        return max(s * s * squares[k] - 2.0 * s * kappa * sums[k] + kappa * kappa * k, 0.0)
    return penalty


class FreeIntercept:
    """A free intercept for SDCA (l2 only): proximal steps on the intercept alone.

    The intercept feature (value B = intercept_scaling) stays in the kernel, its weight w_b
    penalised by l2/2 (w_b - c)^2 around a centre c instead of l2/2 w_b^2, so that the kernel's
    problem is P(w, b) + sigma/2 (b - B c)^2 with sigma = l2 / B^2. After each epoch the centre
    moves to the current w_b: an inexact proximal-point method on b, whose fixed point (w_b = c,
    hence sum_i c_i a_i = 0 from the kernel's optimality) is the free-intercept optimum. With
    l1 = 0 the kernel's w is its v array, v(duals) + the centre on the intercept's entry.
    docs/math.md "Free intercept" has the derivation; the certificate projects the duals onto
    sum_i c_i a_i = 0 like every free-intercept certificate.
    """

    def __init__(self, sdca, options):
        problem = sdca.problem
        if problem.l1 > 0.0:
            raise ValueError("solver='sdca' fits a free intercept (regularize_intercept=False) "
                             "with the l2 penalty only; for the elastic net or l1 with a free "
                             "intercept use solver='agm', 'cd', 'newton' or 'rda'")
        if options["output"] == "average" or options["acceleration"]:
            raise ValueError("solver='sdca' with a free intercept (regularize_intercept=False) "
                             "takes neither output='average' nor acceleration=True")
        self.sdca = sdca
        self.index = problem.n_features
        self.centre = 0.0
        sdca.shrinking = False
        # Warm-start duals onto sum_i c_i a_i = 0, where v(duals) has no intercept share
        # (zero duals are on it, with v = 0, already).
        if np.any(sdca.duals):
            sdca.duals[:] = problem.feasible_duals(sdca.duals)
            problem.dual_vector(sdca.duals, l2=sdca.working_l2, out=sdca.v, feasible=True)

    def start_from(self, weight):
        self.sdca.v[self.index] += weight - self.centre
        self.centre = weight

    def after_epoch(self):
        v = self.sdca.v
        from_duals = v[self.index] - self.centre
        self.centre = v[self.index]
        v[self.index] = from_duals + self.centre
