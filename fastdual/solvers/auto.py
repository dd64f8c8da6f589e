"""solver="auto" (the default): the solver, and for SDCA whether to accelerate, from the
problem's shape, loss, penalty and conditioning. The rules, in order (docs/solvers/auto.md has
the measurements behind them):

  1. an l1 term and a loss cd trains (smooth, per sample): "cd" for pure l1, and for the
     elastic net when kappa >= CD_KAPPA (the l2 part too weak for the dual methods);
  2. a free intercept (regularize_intercept=False) with an l1 term: "newton" for a smooth loss
     (the elastic net below CD_KAPPA), else "rda" (SDCA fits a free intercept with the l2
     penalty only; with it, the rules below apply as they are);
  3. a non-smooth loss (hinge, absolute, epsilon_insensitive): "sdca";
  4. a smooth loss and the l2 penalty: "newton" where its direct solve pays (few features,
     newton.direct_pays: the d x d Hessian formed and factored at each step) for the squared
     loss at any kappa (one step solves it) and for the other losses without a box on their
     duals (logistic, squared epsilon-insensitive) from kappa >= DIRECT_NEWTON_KAPPA;
     otherwise "newton" from kappa >= NEWTON_KAPPA, but on wide data (d > n) plain "sdca"
     for the hinge-type smooth losses (squared_hinge, smooth_hinge: their duals sit on the
     box's bounds, so SDCA's shrinking skips most rows, and Newton's generalised Hessian
     changes pattern from step to step there) and for every smooth loss on nearly orthogonal
     rows (gram_floor >= GRAM_FLOOR: hashed or random features, where SDCA's coordinates
     barely couple and it needs tens of epochs whatever kappa; at its stall it goes on as
     Newton). If plain SDCA stalls on a hinge type there (kappa >= ACCELERATION_KAPPA,
     thousands of epochs per digit), it goes on accelerated when the rows' c_i ||x_i||^2
     spread at most ROW_SPREAD times their mean (the accelerated outer loop stalls on rows of
     very different lengths, raw text: its proximal term follows the longest row) and the
     intercept is not free; on rows of very different
     lengths, it takes a few Newton steps and goes on from their margins' duals, again at
     each stall while that pays (a Newton correction; see fallback);
  5. otherwise "sdca" (moderate regularisation: the elastic net below CD_KAPPA, l2 below
     NEWTON_KAPPA, or below DIRECT_NEWTON_KAPPA where rule 4's direct solve applies).

kappa = R^2 / (gamma l2 n) is SDCA's condition number: R^2 the largest c_i ||x_i||^2 (with the
intercept feature), the loss 1/gamma-smooth, n the number of rows; plain SDCA needs about
kappa epochs per digit of the gap, Newton a few Hessian-vector products per digit whatever
kappa, cd a number of sweeps that grows with the support, not with kappa. Solver options given
with solver="auto" restrict the choice to the solvers that take them all (e.g.
acceleration=True means "sdca"); an explicit solver= always wins.

With no solver options given, `plan` adds the method auto switches to if the first one stalls
(`fallback`; the stall test is fastdual.solvers.switching's), and puts SDCA's first epochs
before Newton where Newton from zero starts badly: on raw text (rows of very different
lengths) and where its first model is the l2 penalty alone (`flat_start`: the smoothed hinge).
"""
import numpy as np

from fastdual._core import rows as _rows
from fastdual.losses import get_loss_spec
from fastdual.solvers import SOLVERS, get_solver, newton, sdca
from fastdual.solvers.switching import Correction, Handover

NEWTON_KAPPA = 5.0
DIRECT_NEWTON_KAPPA = 1.0    # rule 4 with the direct solve, the losses without a box
CD_KAPPA = 10.0
ACCELERATION_KAPPA = 100.0   # rule 4, wide hinge-type: a stalled plain SDCA goes on accelerated
ROW_SPREAD = 10.0            # from this kappa on, when the largest c_i ||x_i||^2 is at most
                             # ROW_SPREAD times their mean
# Above ROW_SPREAD (raw text), a stalled plain SDCA takes CORRECTION_STEPS Newton steps of at
# most CORRECTION_MAX_CG conjugate-gradient iterations each and goes on from their margins'
# duals (switching.Correction; docs/solvers/auto.md, "Newton corrections").
CORRECTION_STEPS = 3
CORRECTION_MAX_CG = 30
# Above ROW_SPREAD, where rule 4 picks Newton (l2, smooth loss), SDCA's first WARMUP_EPOCHS
# epochs come first and Newton starts from their w (switching.Handover; docs/solvers/auto.md,
# "SDCA's first epochs before Newton").
WARMUP_EPOCHS = 8
# Where Newton's first model at w = 0 is the l2 penalty alone (no margin's loss has curvature
# at 0, some has a slope: the smoothed hinge with gamma <= 1), SDCA's first FLAT_START_EPOCHS
# epochs come first as well (docs/solvers/auto.md, "SDCA's first epochs before Newton").
FLAT_START_EPOCHS = 2
# Rule 4 on wide data (d > n) where Newton would take conjugate gradient: plain "sdca" instead
# when the rows are nearly orthogonal, i.e. the smallest eigenvalue of their Gram matrix scaled
# to a unit diagonal, estimated from the columns' second moments and a sample of at most
# GRAM_SAMPLE rows (gram_floor), is at least GRAM_FLOOR.
# There SDCA's coordinates barely couple and it converges in tens of epochs whatever kappa,
# while Newton's conjugate gradient, preconditioned by X's column norms, takes hundreds of
# passes (hashed or random features, more features than samples; docs/solvers/auto.md,
# "Nearly orthogonal rows").
GRAM_FLOOR = 0.05
GRAM_SAMPLE = 400
GRAM_BLOCKS = 4        # the shortfall's trend: from GRAM_BLOCKS disjoint blocks of the sample
GRAM_COLUMNS = 4096
GRAM_BINS = 32         # the columns' second moments grouped by 1/32 of an octave (the edge's sums)
GRAM_SPARSE = 16.0     # m <= sqrt(GRAM_SPARSE N) sparse rows, sqrt(GRAM_DENSE N) dense ones
GRAM_DENSE = 64.0


def condition_number(problem):
    """kappa = R^2 / (gamma l2 n), inf without an l2 term or for a non-smooth loss."""
    gamma = problem.loss.gamma
    if problem.l2 == 0.0 or gamma == 0.0:
        return np.inf
    radius2 = float(np.max(problem.sample_weight * problem.squared_norms(), initial=0.0))
    return radius2 / (gamma * problem.l2 * problem.n_samples)


def row_spread(problem):
    """The largest c_i ||x_i||^2 over their mean (with the intercept feature): 1 for rows of
    one length, hundreds for raw text, where accelerated SDCA's proximal term, set by the
    largest, stalls its outer loop."""
    sizes = problem.sample_weight * problem.squared_norms()
    mean = float(np.mean(sizes)) if sizes.shape[0] else 0.0
    return float(np.max(sizes)) / mean if mean > 0.0 else 1.0


def gram_floor(problem):
    """An estimate of the smallest eigenvalue of the rows' Gram matrix (with the intercept
    feature) scaled to a unit diagonal, over the rows of nonzero norm: 1 for orthogonal rows,
    0 where some rows are linearly dependent (always when they outnumber the features).
    Computed once per X and intercept value (the rows' weights do not enter: rows of zero
    weight, which SDCA skips, can only lower it); the estimate is _gram_floor's."""
    matrix, bias = problem.X, problem.bias
    norms = problem.squared_norms()
    return matrix.derived(("gram_floor", bias), lambda: _gram_floor(matrix, bias, norms))


def _gram_floor(matrix, bias, norms, seed=0):
    """The lower edge of the rows' spectrum as a random matrix with independent columns of the
    rows' second moments predicts it for all N rows (_spectrum_edge), times the shortfall of a
    sample's smallest eigenvalue below the edge the same model predicts for the sample (at
    most 1), carried on to the N rows by its trend from blocks of the sample to the whole:
    features that co-occur (text's vocabulary) or rows that share a direction lower the
    sample's eigenvalue below the model's, and more so on more rows. For sparse rows, 0
    where two rows are equal, and below GRAM_FLOOR at least the bound of the columns with one
    entry (rows_alone); dense rows share their columns, and hashing them would cost 3-5 passes.
    The sample: m rows at random, at most GRAM_SAMPLE and at most sqrt(GRAM_SPARSE N) sparse
    rows (its Gram matrix, m (m + 1) / 2 sparse dot products, costs at most 8 passes over X)
    or sqrt(GRAM_DENSE N) dense ones (m^2 d multiply-adds in BLAS by blocks of GRAM_COLUMNS
    columns); where m = N, the sample's eigenvalue itself (docs/solvers/auto.md, "Nearly
    orthogonal rows")."""
    rows = np.flatnonzero(norms > 0.0)
    count = rows.shape[0]
    if count == 0 or count > matrix.n_features + (bias != 0.0):
        return 0.0
    if matrix.is_sparse and _equal_rows(matrix, rows):
        return 0.0
    bound = np.sqrt((GRAM_SPARSE if matrix.is_sparse else GRAM_DENSE) * count)
    size = int(min(count, GRAM_SAMPLE, bound))
    rng = np.random.default_rng(seed)
    if size == count:
        return _sample_floor(matrix, bias, norms, rows, size, 0, rng)[1]
    moments = _column_moments(matrix, bias, norms, count)
    edge = _spectrum_edge(moments, count)
    part = size // GRAM_BLOCKS
    models = (_spectrum_edge(moments, part), _spectrum_edge(moments, size)) if edge > 0.0 else (0.0,)
    if min(models) > 0.0:
        # The shortfall at the sample's size, and its trend: the shortfall's logarithm at m
        # rows against its mean over the sample's GRAM_BLOCKS disjoint blocks of m / 4 rows,
        # per doubling of the rows (at most 0), carried on to the N rows. Co-occurring columns
        # fall further short on more rows; independent ones keep a ratio near 1 at every size.
        blocks, whole = _sample_floor(matrix, bias, norms, rows, size, part, rng)
        if whole <= 0.0:
            return 0.0
        # (each block's eigenvalue is at least the whole sample's, by interlacing; rounding
        # could break that by a few ulps)
        blocks = np.minimum(1.0, np.maximum(blocks, whole) / models[0])
        ratio = min(1.0, whole / models[1])
        slope = min(0.0, (np.log(ratio) - float(np.mean(np.log(blocks)))) / np.log2(size / part))
        edge *= ratio * np.exp(slope * np.log2(count / size))
    if matrix.is_sparse and edge < GRAM_FLOOR:
        # A lower bound that holds for the rows themselves: a column with one nonzero entry
        # adds to its row's diagonal alone, and the other columns' (and the intercept's) terms
        # are positive semidefinite, so no eigenvalue is below the smallest share of a row's
        # squared norm in such columns (1 for orthogonal rows, which the model of shared
        # columns misses: it spreads each column over all the rows). Taken only where it can
        # change the decision (two passes over the rows).
        alone = _rows.rows_alone(*matrix.kernel_args, matrix.n_samples, matrix.n_features)
        edge = max(edge, float(np.min(alone[rows] / norms[rows])))
    return edge


def _equal_rows(matrix, rows):
    """Whether two of the rows `rows` store the same entries (then the floor is 0: text's
    repeated documents): sdca.identical_rows' groups, shared with SDCA's duplicate groups."""
    identical, labels = sdca.identical_rows(matrix)
    if identical.shape[0] == 0:
        return False
    inside = np.zeros(matrix.n_samples, dtype=bool)
    inside[rows] = True
    labels = labels[inside[identical]]
    return labels.shape[0] > 1 and int(np.bincount(labels).max()) > 1


def _sample_floor(matrix, bias, norms, rows, size, part, rng):
    """The smallest eigenvalues of the Gram matrix (with the intercept feature, scaled to a unit
    diagonal) of `size` of the rows `rows`, drawn at random (all of them when size is their
    number): of its GRAM_BLOCKS disjoint diagonal blocks of `part` rows (none when part is 0),
    and of the whole."""
    if size < rows.shape[0]:
        rows = rng.choice(rows, size, replace=False)
    gram = np.empty((size, size))
    if matrix.is_sparse:
        # The sample's entries with their columns renumbered 0 .. q-1 (q the columns they use):
        # rows_gram's scratch of q entries stays in cache where one of X's width would not.
        # The dot products are the same, term by term.
        starts = matrix.indptr[rows].astype(np.int64)
        lengths = matrix.indptr[rows + 1].astype(np.int64) - starts
        indptr = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        entries = np.arange(indptr[-1]) + np.repeat(starts - indptr[:-1], lengths)
        columns, local = np.unique(matrix.indices[entries], return_inverse=True)
        _rows.rows_gram(matrix.data[entries], local.astype(np.int32), indptr.astype(np.int32),
                        columns.shape[0], bias, np.arange(size, dtype=np.intp),
                        np.zeros(columns.shape[0]), gram)
    else:
        dense = matrix.data.reshape(matrix.n_samples, matrix.n_features)
        gram.fill(bias * bias)
        for first in range(0, matrix.n_features, GRAM_COLUMNS):
            block = dense[rows, first:first + GRAM_COLUMNS].astype(np.float64, copy=False)
            gram += block @ block.T
    scale = 1.0 / np.sqrt(norms[rows])
    gram *= scale[:, None]
    gram *= scale[None, :]

    def lowest(part_of_gram):
        return max(float(np.linalg.eigvalsh(part_of_gram)[0]), 0.0)

    blocks = np.array([lowest(gram[b * part:(b + 1) * part, b * part:(b + 1) * part])
                       for b in range(GRAM_BLOCKS if part > 0 else 0)])
    return blocks, lowest(gram)


def _column_moments(matrix, bias, norms, count):
    """The features' second moments over the count rows of nonzero norm, each row scaled to the
    unit norm it has with the intercept feature, sigma_j^2 = sum_i x_ij^2 / (||x_i||^2 + b^2) /
    count (one pass over the rows, rows.column_moment_groups), the nonzero ones grouped by
    GRAM_BINS per octave: (the group's mean moment, its number of features). The intercept's
    own entry, shared by every row, is a rank-one term that the estimate leaves out (adding it
    moves the smallest eigenvalue up, if at all)."""
    scale = np.zeros(matrix.n_samples)
    positive = norms > 0.0
    with np.errstate(over="ignore"):            # (a subnormal norm: an infinite moment, below)
        scale[positive] = 1.0 / norms[positive]     # (norms have the intercept's b^2 in them)
    groups = _rows.column_moment_groups(*matrix.kernel_args, matrix.n_samples,
                                        matrix.n_features, scale, float(count), GRAM_BINS)
    if groups is None:
        return np.empty(0), np.empty(0)     # (rows of subnormal norm: no model)
    sums, sizes = groups
    kept = sizes > 0.0
    return sums[kept] / sizes[kept], sizes[kept]


def _spectrum_edge(moments, rows):
    """The lower edge of the spectrum of X X^T for `rows` rows with independent columns of the
    second moments `moments` = (values s_j, their numbers c_j), by Silverstein's equation for
    its limit (docs/solvers/auto.md): max over t > 0 of
        e(t) = -rows / t + sum_j c_j s_j / (1 + s_j t),
    whose maximiser is the one root of sum_j c_j (s_j t / (1 + s_j t))^2 = rows (increasing in
    t from 0 to sum_j c_j); 0 when there is none (no more features than rows). For p columns of
    moment 1/p it is (1 - sqrt(rows / p))^2, Marchenko and Pastur's edge."""
    values, sizes = moments
    if sizes.sum() <= rows:
        return 0.0
    # The edge of moments c s is c times that of s (t scales by 1 / c): solved for the moments
    # over their largest, which keeps t and the sums away from overflow and underflow.
    largest = float(values.max())
    values = values / largest

    def excess(t):
        share = values * t / (1.0 + values * t)
        return float(sizes @ (share * share)) - rows

    low = np.sqrt(rows / float(sizes @ (values * values)))     # excess(low) <= 0
    high = 2.0 * low
    while excess(high) < 0.0 and np.isfinite(high):
        low, high = high, 2.0 * high
    for _ in range(100):
        middle = np.sqrt(low) * np.sqrt(high)
        if excess(middle) < 0.0:
            low = middle
        else:
            high = middle
        if high <= low * (1.0 + 1e-12):
            break
    t = np.sqrt(low) * np.sqrt(high)
    return largest * max(0.0, float(sizes @ (values / (1.0 + values * t))) - rows / t)


def cd_trains(problem):
    """Whether cd trains the problem's loss (its capabilities: a derivative and a curvature
    bound per sample)."""
    return SOLVERS["cd"].needs <= get_loss_spec(problem.loss_name).capabilities


def rule(problem):
    """(solver name, the options the rule sets, the rule's number) for the problem."""
    smooth = problem.loss.gamma > 0.0          # the loss is 1/gamma-smooth; 0: non-smooth
    kappa = condition_number(problem)
    if problem.l1 > 0.0 and smooth and cd_trains(problem) and kappa >= CD_KAPPA:
        return "cd", {}, 1                     # (kappa is inf for pure l1)
    if problem.free_intercept and problem.l1 > 0.0:
        return ("newton" if smooth else "rda"), {}, 2
    if not smooth:
        return "sdca", {}, 3
    capabilities = get_loss_spec(problem.loss_name).capabilities
    hinge_type = "box" in capabilities
    if problem.l1 == 0.0 and not hinge_type and newton.direct_pays(problem):
        quadratic = "quadratic_dual" in capabilities
        if quadratic or kappa >= DIRECT_NEWTON_KAPPA:
            return "newton", {}, 4
    if problem.l1 == 0.0 and kappa >= NEWTON_KAPPA:
        if problem.n_features > problem.n_samples and (
                hinge_type or gram_floor(problem) >= GRAM_FLOOR):
            return "sdca", {}, 4
        return "newton", {}, 4
    return "sdca", {}, 5


def fallback(problem, name, options):
    """(solver name, options) solver="auto" switches to when `name` with `options` stalls
    (fastdual.solvers.switching), or None: accelerated SDCA goes on as plain SDCA, Newton as
    SDCA (which trains every loss Newton does, but the elastic net with a free intercept), and
    plain SDCA as Newton for a smooth loss (l2 or the elastic net, either intercept), but the
    hinge-type losses on wide data, where Newton's generalised Hessian is the slower and
    stalling method: there, accelerated from kappa >= ACCELERATION_KAPPA on rows of similar
    lengths (l2 only, the intercept not free), a Newton correction (switching.Correction) on
    rows whose c_i ||x_i||^2 spread more than ROW_SPREAD times their mean, else nothing
    (docs/solvers/auto.md)."""
    if name == "sdca" and options.get("acceleration"):
        return "sdca", {key: value for key, value in options.items() if key != "acceleration"}
    if options:
        return None
    if name == "newton" and not (problem.free_intercept and problem.l1 > 0.0):
        return "sdca", {}
    if name == "sdca" and problem.loss.gamma > 0.0 and problem.l2 > 0.0:
        hinge_type = "box" in get_loss_spec(problem.loss_name).capabilities
        if not (hinge_type and problem.n_features > problem.n_samples):
            return "newton", {}
        spread = row_spread(problem)
        if (problem.l1 == 0.0 and condition_number(problem) >= ACCELERATION_KAPPA
                and spread <= ROW_SPREAD and not problem.free_intercept):
            return "sdca", {"acceleration": True}
        if spread > ROW_SPREAD:
            return Correction("newton", {"max_cg": CORRECTION_MAX_CG}, CORRECTION_STEPS)
    return None


def flat_start(problem):
    """Whether Newton's model at w = 0 is the l2 penalty alone: no sample of positive weight
    has curvature at the zero margin, and some has a slope there (the smoothed hinge with gamma
    <= 1: every margin at the end of its quadratic stretch or past it, on the linear part)."""
    kept = problem.sample_weight > 0.0
    y, zero = problem.y[kept], np.zeros(int(np.count_nonzero(kept)))
    return (not np.any(np.asarray(problem.loss.curvatures(y, zero)) != 0.0)
            and bool(np.any(np.asarray(problem.loss.derivatives(y, zero)) != 0.0)))


def plan(problem, options, solvers):
    """The methods solver="auto" runs, in order: choose's, then (with no solver options
    given) its fallback when it stalls. Each is (solver name, options), a switching.Correction
    or a switching.Handover: where choose picks Newton (l2, the intercept not free) with
    conjugate gradient (its direct solve does not pay) on rows whose c_i ||x_i||^2 spread more
    than ROW_SPREAD times their mean, plain SDCA runs its first WARMUP_EPOCHS epochs and hands
    over to Newton (Newton-CG from zero there spends hundreds of passes on its first steps;
    direct steps do not, and the epochs before them cost 1.6-5 times their run), and where
    Newton's first model is the l2 penalty alone (flat_start), its first FLAT_START_EPOCHS
    (docs/solvers/auto.md)."""
    first = choose(problem, options, solvers)
    if options:
        return [first]
    stages = [first]
    if first[0] == "newton" and problem.l1 == 0.0 and not problem.free_intercept:
        if row_spread(problem) > ROW_SPREAD and not newton.direct_pays(problem):
            stages = [("sdca", {}), Handover("newton", {}, WARMUP_EPOCHS)]
        elif flat_start(problem):
            stages = [("sdca", {}), Handover("newton", {}, FLAT_START_EPOCHS)]
    second = fallback(problem, *first)
    return stages if second is None else stages + [second]


def choose(problem, options, solvers):
    """(solver name, options) for solver="auto": the rule's choice when it takes the options
    given, else the first of sdca, newton, cd, spdc, rda that takes them all and the problem."""
    name, chosen, _ = rule(problem)
    if set(options) <= set(solvers[name].options):
        return name, {**chosen, **options}
    for name in ("sdca", "newton", "cd", "spdc", "rda"):
        if not set(options) <= set(solvers[name].options):
            continue
        try:
            get_solver(name, problem)        # the registry's own support checks
        except ValueError:
            continue
        return name, options
    raise ValueError(f"solver='auto': no solver takes the options {sorted(options)} for this "
                     f"problem; name one with solver=")
