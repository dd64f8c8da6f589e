"""Assembly: from user arguments to one validated problem the kernels can run on.

    P(w) = (1/n) sum_i c_i phi(y_i, x_i . w) + l2/2 ||w||^2 + l1 ||w||_1

Parametrisations, mapped here once (docs/math.md):
  alpha, l1_ratio (scikit-learn):  l2 = alpha (1 - l1_ratio),  l1 = alpha l1_ratio;
  C (LIBLINEAR, C sum_i c_i phi + 1/2||w||^2):  alpha = 1 / (C sum_i c_i).
Sample weights are normalised to mean 1, so that with either parametrisation an integer weight k
is the same as repeating the row k times. With neither alpha nor C given, C = 1 (LIBLINEAR's default).
The intercept is LIBLINEAR's -B: a constant feature of value intercept_scaling, regularised;
or, with regularize_intercept=False, a free intercept (the same feature, its weight not
penalised), whose dual carries the constraint sum_i c_i alpha_i = 0: every dual point is
projected onto it (and the loss's box) before it is certified (docs/math.md, "Free intercept").
Pure l1 (l2 = 0) is certified as such; solvers that need strong convexity add a helper l2 of
their own (fastdual.solvers.sdca), never part of the Problem.
"""
import numbers
from dataclasses import dataclass

import numpy as np

from fastdual._core import gap as _gap, rows as _rows
from fastdual._validation import (check_fraction, check_matrix, check_positive,
                                  check_sample_weight, check_targets)
from fastdual.losses import make_loss
from fastdual.projection import project_box_hyperplane

# The strengths the kernels' arithmetic (1 / (l2 n), steps of size ||x||^2 / (l2 n)) handles
# without overflow for data of any sensible scale (tests/test_bad_input.py trains at both ends).
ALPHA_RANGE = (1e-100, 1e300)
EPS = np.finfo(float).eps


@dataclass
class Problem:
    X: object                 # _validation.Matrix
    y: np.ndarray             # float64 targets (+-1 for binary losses)
    sample_weight: np.ndarray # normalised to mean 1
    classes: object           # ndarray of the two labels, or None for regression
    loss_name: str
    loss: object              # a fastdual._core.losses.Loss
    loss_params: dict
    task: str
    alpha: float
    l1_ratio: float
    l2: float                 # the l2 strength of the objective (0 for pure l1)
    l1: float
    bias: float               # value of the intercept feature, 0 without intercept
    fit_intercept: bool
    intercept_scaling: float
    free_intercept: bool = False   # the intercept feature's weight is not penalised

    @property
    def n_samples(self):
        return self.X.n_samples

    @property
    def n_features(self):
        return self.X.n_features

    def squared_norms(self):
        """||x_i||^2 + bias^2 for every row (computed once for the rows and this bias)."""
        return self.X.squared_norms(self.bias)

    @property
    def n_duals(self):
        """The length of the dual vector (dual_coef_ of a model)."""
        return self.n_samples

    @property
    def refinable(self):
        """Whether SDCA's epochs may raise a dual point of this problem (fastdual.duality_gap's
        refinement): with a free intercept, only with the l2 penalty alone (SDCA's free
        intercept, a proximal point on it, whose duals the certificate projects onto
        sum_i c_i alpha_i = 0)."""
        return not self.free_intercept or self.l1 == 0.0

    not_refinable = ("refine_epochs must be 0 or None with a free intercept and an l1 term "
                     "(regularize_intercept=False, l1_ratio > 0): SDCA refines free-intercept "
                     "duals with the l2 penalty only")

    @property
    def intercept_mode(self):
        return intercept_mode(self.fit_intercept, self.free_intercept)

    def describe(self):
        """What a Model reports of the objective it was trained on (fastdual._fit.make_model)."""
        return describe_objective(self.loss_name, self.loss_params, self.task, self.alpha,
                                  self.l1_ratio, self.fit_intercept, self.intercept_scaling,
                                  self.free_intercept, self.n_features)

    def coefficients(self, w):
        """(coef, intercept) of a point w of the problem's layout (intercept feature last)."""
        return w[:self.n_features], w[self.n_features] * self.bias

    def dual_coef(self, duals):
        """A model's dual_coef_ from the problem's duals."""
        return duals

    def primal_dual(self, w, duals, l2=None, v_out=None, feasible=False):
        """(primal, dual): the values of `certificate`, for callers that need no gap."""
        return self.certificate(w, duals, l2, v_out, feasible)[:2]

    def certificate(self, w, duals, l2=None, v_out=None, feasible=False, exact_v=False):
        """(primal, dual, gap) by the one shared certificate function, for the objective's l2
        or, for a solver's working problem, another l2. The gap is the kernel's Fenchel-Young
        sum, P - D without cancellation (docs/math.md Sec. 2). v(duals) is written to v_out if
        given; with exact_v, summed with no rounding lost (however much its terms cancel; for
        a solver that takes it over as its own v; the pass takes 25-95 % longer over dense
        rows, 10-80 % over sparse ones), the certificate itself the same bits either way.

        With a free intercept the duals are first projected onto the dual's hyperplane
        (`feasible_duals`) unless the caller says it did so (feasible=True), so the bound holds
        for any duals passed; with pure l1 the projected margin duals of w are tried as well
        and the better dual point is reported (as the kernel does without a free intercept)."""
        data, indices, indptr = self.X.kernel_args
        l2 = self.l2 if l2 is None else l2
        if self.free_intercept and not feasible:
            duals = self.feasible_duals(duals)
        if v_out is None:
            v_out = np.empty(self.n_features + 1)
        primal, dual, gap = _gap.primal_dual(data, indices, indptr, self.n_samples,
                                             self.n_features, self.bias, self.y,
                                             self.sample_weight, w, duals, l2, self.l1,
                                             self.loss, v_out, self.free_intercept,
                                             bool(exact_v))
        if self.free_intercept and l2 == 0.0:
            margin_duals = self.duals_from_margins(w)
            _, margin_dual, margin_gap = _gap.primal_dual(
                data, indices, indptr, self.n_samples, self.n_features, self.bias, self.y,
                self.sample_weight, w, margin_duals, l2, self.l1, self.loss,
                np.empty(self.n_features + 1), True)
            if margin_gap < gap:
                dual, gap = margin_dual, margin_gap
        return primal, dual, gap

    def dual_vector(self, duals, l2=None, out=None, feasible=False):
        """v(duals) = 1/(l2 n) sum_i c_i duals_i x_i (the intercept feature's entry last, 0 for a
        free intercept), for the objective's l2 or another: one transpose product over the rows,
        written into `out` (a new array if None). With a free intercept the duals are first
        made feasible unless the caller says they are, as primal_dual does."""
        if out is None:
            out = np.empty(self.n_features + 1)
        if self.free_intercept and not feasible:
            duals = self.feasible_duals(duals)
        l2 = self.l2 if l2 is None else l2
        coef = self.sample_weight * np.asarray(duals, dtype=np.float64) \
            * (1.0 / (l2 * self.n_samples))
        _rows.transpose_times(*self.X.kernel_args, self.n_samples, self.n_features,
                              0.0 if self.free_intercept else self.bias, coef, out)
        return out

    def feasible_duals(self, duals):
        """duals made feasible: with a free intercept, projected onto the loss's box and the
        hyperplane sum_i c_i a_i = 0 (exactly, in O(n): fastdual.projection); else as given."""
        duals = np.asarray(duals, dtype=np.float64)
        if not self.free_intercept:
            return duals
        lower, upper = self.loss.dual_bounds(self.y)
        # A point already on both to rounding (a projection's output, a model's dual_coef_) is
        # kept as it is, so that certifying it again gives the same bits.
        terms = self.sample_weight * duals
        scale = float(np.max(np.abs(terms), initial=0.0))
        if (np.all((lower <= duals) & (duals <= upper))
                and abs(float(np.sum(terms))) <= 4.0 * duals.shape[0] * EPS * scale):
            return duals
        start = np.clip(np.nan_to_num(duals, nan=0.0), np.maximum(lower, -1e300),
                        np.minimum(upper, 1e300))
        return project_box_hyperplane(start, lower, upper, self.sample_weight, 0.0)

    def duals_from_margins(self, w):
        """The feasible dual point -phi'(x_i . w) of a primal point (intercept feature last),
        projected onto the free intercept's hyperplane when there is one."""
        margins = self.X.matvec(w[:self.n_features]) + self.bias * w[self.n_features]
        return self.feasible_duals(self.loss.duals_from_margins(self.y, margins))

    def scaling_advice(self):
        """A sentence on the data's scale when its values are far from unit scale (the root mean
        square of the stored entries above 10), else ''. Coordinate methods take steps of size
        ||x_i||^2 / (alpha n): raw features in the hundreds or thousands make them tiny."""
        data = self.X.data[:self.X.indptr[-1]] if self.X.is_sparse else self.X.data
        if data.size == 0:
            return ""
        # (a dot product: no temporary the size of X)
        rms = float(np.sqrt(float(np.dot(data, data)) / data.size))
        if not rms > 10.0:
            return ""
        norms = np.sqrt(self.squared_norms())
        return (f"The data look unscaled: the entries of X have root mean square {rms:.3g}, row "
                f"norms ||x_i|| range from {norms.min():.3g} to {norms.max():.3g} (median "
                f"{np.median(norms):.3g}) and max ||x_i||^2 / (alpha n) = "
                f"{norms.max() ** 2 / (self.alpha * self.n_samples):.3g}; standardizing the "
                "features (e.g. scikit-learn's StandardScaler) or normalizing the rows usually "
                "helps far more than more epochs.")


def intercept_mode(fit_intercept, free_intercept):
    """"none", "free" (unpenalised) or "regularized" (LIBLINEAR's -B feature)."""
    return "none" if not fit_intercept else ("free" if free_intercept else "regularized")


def describe_objective(loss_name, loss_params, task, alpha, l1_ratio, fit_intercept,
                       intercept_scaling, free_intercept, n_features):
    """The Model fields that state an objective: every face describes its objective this way."""
    return dict(loss=loss_name, loss_params=dict(loss_params), task=task, alpha=alpha,
                l1_ratio=l1_ratio, l2_=alpha * (1.0 - l1_ratio), l1_=alpha * l1_ratio,
                fit_intercept=bool(fit_intercept), intercept_scaling=intercept_scaling,
                intercept_mode=intercept_mode(fit_intercept, free_intercept),
                n_features_in_=int(n_features))


def class_multipliers(class_weight, classes, counts):
    """Each class's weight multiplier: "balanced" is n / (k * count of the class) (scikit-learn's
    definition), a dict {label: weight} gives its labels' weights (labels absent weigh 1)."""
    counts = np.asarray(counts)
    if isinstance(class_weight, str) and class_weight == "balanced":
        return counts.sum() / (classes.shape[0] * counts.astype(np.float64))
    if not isinstance(class_weight, dict):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict {{label: weight}}, "
                         f"got {class_weight!r}")
    unknown = [key for key in class_weight if not np.any(classes == key)]
    if unknown:
        raise ValueError(f"class_weight has labels that are not in y: {unknown[:5]}; "
                         f"the classes are {classes.tolist()[:20]}")
    per_class = np.ones(classes.shape[0])
    for m, label in enumerate(classes):
        label = label.item() if isinstance(label, np.generic) else label
        value = class_weight.get(label, 1.0)
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not np.isfinite(value) or value < 0:
            raise ValueError(f"class_weight[{label!r}] must be a finite number >= 0, "
                             f"got {value!r}")
        per_class[m] = float(value)
    return per_class


def map_strength(alpha, C, l1_ratio, total_weight):
    """(alpha, l1_ratio) from the user's alpha or C (exactly one may be given; neither = C 1)."""
    if alpha is not None and C is not None:
        raise ValueError("give either alpha or C, not both")
    lo, hi = ALPHA_RANGE
    if alpha is None:
        C = 1.0 if C is None else check_positive("C", C)
        if not np.isfinite(total_weight):
            raise ValueError("sample_weight sums to more than the largest float, so alpha = "
                             "1 / (C * sum) = 0: rescale sample_weight, or give alpha instead "
                             "of C (weights are then normalised to mean 1)")
        alpha = 1.0 / (C * total_weight) if C * total_weight > 0 else np.inf
        if not lo <= alpha <= hi:
            with np.errstate(all="ignore"):
                total = np.float64(total_weight)
                c_range = 1.0 / (hi * total), 1.0 / (lo * total)
            raise ValueError(
                f"C={C!r} gives alpha = 1 / (C * sum of sample weights) = {alpha:.3g}, outside "
                f"the range fastdual trains in, [{lo:g}, {hi:g}]: C must be in "
                f"[{c_range[0]:.3g}, {c_range[1]:.3g}] with these sample weights")
    else:
        alpha = check_positive("alpha", alpha)
        if not lo <= alpha <= hi:
            raise ValueError(f"alpha must be in [{lo:g}, {hi:g}], got {alpha!r}")
    return alpha, check_fraction("l1_ratio", l1_ratio)


def build_problem(X, y, *, loss, alpha, C, l1_ratio, fit_intercept, intercept_scaling,
                  sample_weight, loss_params, regularize_intercept=True, structured=False):
    spec, loss_obj, params = make_loss(loss, loss_params, structured)
    matrix = check_matrix(X)
    targets, classes = check_targets(y, matrix.n_samples, spec.task, spec.name)
    weights, total_weight = check_sample_weight(sample_weight, matrix.n_samples)
    alpha, l1_ratio = map_strength(alpha, C, l1_ratio, total_weight)
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise TypeError(f"fit_intercept must be True or False, got {fit_intercept!r}")
    if not isinstance(regularize_intercept, (bool, np.bool_)):
        raise TypeError(f"regularize_intercept must be True or False, got "
                        f"{regularize_intercept!r}")
    intercept_scaling = check_positive("intercept_scaling", intercept_scaling)
    bias = intercept_scaling if fit_intercept else 0.0
    return Problem(matrix, targets, weights, classes, spec.name, loss_obj, params, spec.task,
                   alpha, l1_ratio, alpha * (1.0 - l1_ratio), alpha * l1_ratio, bias,
                   bool(fit_intercept), intercept_scaling,
                   bool(fit_intercept) and not regularize_intercept)


