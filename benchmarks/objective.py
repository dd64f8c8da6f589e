"""Independent numpy/scipy evaluation of the benchmark objective.

    P(w) = (1/n) sum_i phi(y_i, x_i . w) + l2/2 ||w||^2 + l1 ||w||_1
    l2 = alpha (1 - l1_ratio),  l1 = alpha l1_ratio

No intercept.  Every solver, fastdual included, is scored with :func:`primal`
on the coefficients it returns; nothing here calls a solver.
"""
from dataclasses import dataclass

import numpy as np
from scipy.special import expit


@dataclass(frozen=True)
class Problem:
    name: str
    loss: str          # hinge, squared_hinge, logistic, smooth_hinge, squared
    l1_ratio: float = 0.0
    gamma: float = 1.0  # smooth_hinge smoothing

    @property
    def smooth(self):
        """True when the data term is differentiable (L-BFGS-B applies)."""
        return self.loss != "hinge"

    def l2(self, alpha):
        return alpha * (1.0 - self.l1_ratio)

    def l1(self, alpha):
        return alpha * self.l1_ratio


PROBLEMS = {
    "hinge": Problem("hinge", "hinge"),
    "squared_hinge": Problem("squared_hinge", "squared_hinge"),
    "logistic": Problem("logistic", "logistic"),
    "smooth_hinge": Problem("smooth_hinge", "smooth_hinge", gamma=1.0),
    "enet_logistic": Problem("enet_logistic", "logistic", l1_ratio=0.5),
    "ridge": Problem("ridge", "squared"),
}


def loss_values(loss, y, z, gamma=1.0):
    """phi(y_i, z_i) elementwise."""
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - y * z)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - y * z) ** 2
    if loss == "logistic":
        return np.logaddexp(0.0, -y * z)
    if loss == "smooth_hinge":
        u = y * z
        return np.where(u >= 1.0, 0.0,
                        np.where(u <= 1.0 - gamma, 1.0 - u - 0.5 * gamma,
                                 (1.0 - u) ** 2 / (2.0 * gamma)))
    if loss == "squared":
        return 0.5 * (z - y) ** 2
    raise ValueError("unknown loss %r" % loss)


def loss_derivative(loss, y, z, gamma=1.0):
    """d phi / d z elementwise (smooth losses only)."""
    if loss == "squared_hinge":
        return -2.0 * y * np.maximum(0.0, 1.0 - y * z)
    if loss == "logistic":
        return -y * expit(-y * z)
    if loss == "smooth_hinge":
        return -y * np.clip((1.0 - y * z) / gamma, 0.0, 1.0)
    if loss == "squared":
        return z - y
    raise ValueError("loss %r is not differentiable" % loss)


def as_coef(w, d):
    w = np.asarray(w, dtype=np.float64).ravel()
    if w.shape[0] != d:
        raise ValueError("coefficient vector has %d entries, data has %d features"
                         % (w.shape[0], d))
    return w


def primal(w, X, y, problem, alpha):
    """P(w) for ``problem`` (a :class:`Problem` or its name) at regularisation ``alpha``."""
    if isinstance(problem, str):
        problem = PROBLEMS[problem]
    w = as_coef(w, X.shape[1])
    z = np.asarray(X @ w).ravel()
    data = loss_values(problem.loss, y, z, problem.gamma).mean()
    return float(data + 0.5 * problem.l2(alpha) * np.dot(w, w)
                 + problem.l1(alpha) * np.abs(w).sum())


def smooth_value_and_grad(w, X, y, problem, alpha):
    """P and its gradient for a smooth problem without l1 term."""
    n = X.shape[0]
    z = np.asarray(X @ w).ravel()
    l2 = problem.l2(alpha)
    f = loss_values(problem.loss, y, z, problem.gamma).mean() + 0.5 * l2 * np.dot(w, w)
    g = np.asarray(X.T @ loss_derivative(problem.loss, y, z, problem.gamma)).ravel() / n + l2 * w
    return f, g


def split_value_and_grad(uv, X, y, problem, alpha):
    """P(u - v) with the l1 term written as l1 * sum(u + v), u, v >= 0.

    Smooth in (u, v) under bound constraints, so L-BFGS-B minimises the elastic-net
    objective to high precision; at a minimiser u and v have disjoint supports.
    """
    d = X.shape[1]
    u, v = uv[:d], uv[d:]
    f, g = smooth_value_and_grad(u - v, X, y, problem, alpha)
    l1 = problem.l1(alpha)
    f += l1 * (u.sum() + v.sum())
    return f, np.concatenate([g + l1, -g + l1])


def relative_suboptimality(p, p_star):
    return (p - p_star) / abs(p_star)
