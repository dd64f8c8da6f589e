"""Assembly: from user arguments to one validated problem the kernels can run on.

    P(w) = (1/n) sum_i c_i phi(y_i, x_i . w) + l2/2 ||w||^2 + l1 ||w||_1

Parametrisations, mapped here once (docs/math.md):
  alpha, l1_ratio (scikit-learn):  l2 = alpha (1 - l1_ratio),  l1 = alpha l1_ratio;
  C (LIBLINEAR, C sum_i c_i phi + 1/2||w||^2):  alpha = 1 / (C sum_i c_i).
Sample weights are normalised to mean 1, so that with either parametrisation an integer weight k
is the same as repeating the row k times. With neither alpha nor C given, C = 1 (LIBLINEAR's default).
The intercept is LIBLINEAR's -B: a constant feature of value intercept_scaling, regularised.
"""
from dataclasses import dataclass

import numpy as np

from fastdual import _gap, _rows
from fastdual._validation import (check_fraction, check_matrix, check_positive,
                                  check_sample_weight, check_targets)
from fastdual.losses import make_loss


@dataclass
class Problem:
    X: object                 # _validation.Matrix
    y: np.ndarray             # float64 targets (+-1 for binary losses)
    sample_weight: np.ndarray # normalised to mean 1
    classes: object           # ndarray of the two labels, or None for regression
    loss_name: str
    loss: object              # a _losses.Loss
    loss_params: dict
    task: str
    alpha: float
    l1_ratio: float
    l2: float                 # the l2 strength the kernels use (l2 + l2_added)
    l1: float
    l2_added: float           # > 0 only for pure l1 (seed 000 Sec. 3.1)
    bias: float               # value of the intercept feature, 0 without intercept
    fit_intercept: bool
    intercept_scaling: float

    @property
    def n_samples(self):
        return self.X.n_samples

    @property
    def n_features(self):
        return self.X.n_features

    def squared_norms(self):
        data, indices, indptr = self.X.kernel_args
        norms = _rows.row_squared_norms(data, indices, indptr, self.n_samples, self.n_features,
                                        self.bias)
        if not np.isfinite(norms).all():
            raise ValueError("X has values so large that squared row norms overflow float64; "
                             "rescale X (e.g. rows to unit norm)")
        return norms

    def primal_dual(self, w, alpha, v_out=None, l2=None):
        """(primal, dual) by the one shared certificate function; v(alpha) written to v_out."""
        if v_out is None:
            v_out = np.empty(self.n_features + 1)
        data, indices, indptr = self.X.kernel_args
        return _gap.primal_dual(data, indices, indptr, self.n_samples, self.n_features, self.bias,
                                self.y, self.sample_weight, w, alpha,
                                self.certified_l2 if l2 is None else l2, self.l1, self.loss, v_out)

    @property
    def certified_l2(self):
        """The l2 strength of the problem the user asked for (without the pure-l1 helper term)."""
        return self.l2 - self.l2_added


def map_strength(alpha, C, l1_ratio, total_weight):
    """(alpha, l1_ratio) from the user's alpha or C (exactly one may be given; neither = C 1)."""
    if alpha is not None and C is not None:
        raise ValueError("give either alpha or C, not both")
    if alpha is None:
        C = 1.0 if C is None else check_positive("C", C)
        alpha = 1.0 / (C * total_weight)
    else:
        alpha = check_positive("alpha", alpha)
    return alpha, check_fraction("l1_ratio", l1_ratio)


def build_problem(X, y, *, loss, alpha, C, l1_ratio, fit_intercept, intercept_scaling,
                  sample_weight, tol, loss_params):
    spec, loss_obj, params = make_loss(loss, loss_params)
    matrix = check_matrix(X)
    targets, classes = check_targets(y, matrix.n_samples, spec.task, spec.name)
    raw_weight_sum = (float(np.sum(sample_weight, dtype=np.float64))
                      if sample_weight is not None else float(matrix.n_samples))
    weights = check_sample_weight(sample_weight, matrix.n_samples)
    alpha, l1_ratio = map_strength(alpha, C, l1_ratio, raw_weight_sum)
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise TypeError(f"fit_intercept must be True or False, got {fit_intercept!r}")
    intercept_scaling = check_positive("intercept_scaling", intercept_scaling)
    bias = intercept_scaling if fit_intercept else 0.0
    l2 = alpha * (1.0 - l1_ratio)
    l1 = alpha * l1_ratio
    l2_added = 0.0
    if l2 == 0.0:
        # Pure l1 (seed 000 Sec. 3.1): SDCA needs a strongly convex g, so the kernels solve the
        # problem with an added lambda/2 ||w||^2. The solver lowers lambda from this start value by
        # continuation (solvers.run_sdca); the certificate is always that of the pure-l1 problem.
        l2_added = l1
        l2 = l2_added
    return Problem(matrix, targets, weights, classes, spec.name, loss_obj, params, spec.task,
                   alpha, l1_ratio, l2, l1, l2_added, bias, bool(fit_intercept), intercept_scaling)
