"""Time per element of the linear-time box+hyperplane projection (seed 004 Sec. 5.5.1, Alg. 8).

    python -m benchmarks.projection            # n = 1e3 ... 1e7, 5 repeats
    python -m benchmarks.projection --quick    # n = 1e3 ... 1e6, 3 repeats (well under 2 minutes)

For each n the instance is the SVM-dual step the projection exists for: m ~ N(0, 1), box [0, 1],
sigma = labels in {-1, +1}, per-coordinate d ~ U(0.5, 2), z = 0.  Columns (nanoseconds per element,
median over repeats):

  fastdual     fastdual.projection.project_box_hyperplane (validation included)
  sort-based   the O(n log n) method of the seed's Sec. 5.5.1 opening: sort the 2n kinks, sweep
               the slope/offset, interpolate (numpy, vectorised; written here)
  partition    numpy.partition of an n-vector at its median (copy included): the floor for any
               method that must at least find one order statistic of the data
  sort         numpy.sort of an n-vector
  x part.      fastdual / partition;   x sort-b.  sort-based / fastdual (speed-up)
  max|diff|    largest difference between fastdual and the sort-based solution

Each repeat times every column once (round-robin), so that load from other processes affects all
columns alike; the ratio columns are medians of the per-repeat ratios.  A second table does the
same for the elastic-net ball (Sec. 5.5.2) against a sort-based solver.
"""
import argparse
import time

import numpy as np

from fastdual.projection import project_box_hyperplane, project_elastic_net_ball


def sort_based_projection(m, lower, upper, sigma, z, d):
    """Reference O(n log n) solver for problem (64) with finite bounds and sigma != 0.

    f(lambda) = sum_i h_i(lambda) - z', h_i = clip(w_i lambda, lo_i, hi_i) (eq. 66): sort the kinks,
    accumulate the change of offset and slope at each kink, evaluate f at every kink, and solve
    the linear piece where f changes sign."""
    n = m.shape[0]
    lower, upper, sigma, d = (np.broadcast_to(np.asarray(x, dtype=float), (n,))
                              for x in (lower, upper, sigma, d))
    s = sigma / d**2
    w = sigma * s
    left = np.where(sigma > 0, lower, upper)
    right = np.where(sigma > 0, upper, lower)
    lo = sigma * (left - m)
    hi = sigma * (right - m)
    zp = z - np.dot(sigma, m)
    pos = np.concatenate([lo / w, hi / w])
    d_const = np.concatenate([-lo, hi])             # change of the offset when passing the kink
    d_slope = np.concatenate([w, -w])
    order = np.argsort(pos)
    pos = pos[order]
    const = lo.sum() - zp + np.cumsum(d_const[order])
    slope = np.cumsum(d_slope[order])
    fvals = const + slope * pos
    k = int(np.searchsorted(fvals, 0.0))            # first kink with f >= 0
    if k == 0:
        lam = pos[0]
    elif k == 2 * n:
        lam = pos[-1]
    elif slope[k - 1] > 0:
        lam = min(max(-const[k - 1] / slope[k - 1], pos[k - 1]), pos[k])
    else:
        lam = pos[k]
    return np.clip(m + s * lam, lower, upper)


def sort_based_ball(g, gamma, r):
    """Reference O(n log n) projection onto {gamma ||w||_1 + 1/2 ||w||^2 <= r} (gamma > 0):
    sort |g| decreasingly, closed-form multiplier for every active-set size, keep the consistent
    one, then eq. (69)."""
    a = np.abs(g)
    if gamma * a.sum() + 0.5 * np.dot(a, a) <= r:
        return g.copy()
    srt = -np.sort(-a)
    k = np.arange(1, len(a) + 1)
    u = np.sqrt((np.cumsum(srt * (srt + 2 * gamma)) + k * gamma**2) / (2 * r + k * gamma**2))
    tau = gamma * (u - 1.0)
    nxt = np.append(srt[1:], 0.0)
    j = int(np.argmax((tau < srt) & (tau >= nxt)))
    return np.sign(g) * np.maximum(a - tau[j], 0.0) / u[j]


def instance(n, rng):
    m = rng.standard_normal(n)
    sigma = rng.choice([-1.0, 1.0], n)
    d = rng.uniform(0.5, 2.0, n)
    return m, 0.0, 1.0, sigma, 0.0, d


def _loop_count(func):
    """How many calls make one measurement last at least ~20 ms (small n are looped)."""
    start = time.perf_counter()
    func()
    once = time.perf_counter() - start
    return max(1, int(0.02 / max(once, 1e-9)))


STAT = np.median


def measure(funcs, n, repeats):
    """ns per element of every function in `funcs`, measured round-robin: each repeat times every
    function once, so that load from other processes hits all columns alike.  Returns the median
    (or, with --stat min, the best) times and per-repeat time ratios to the first function."""
    numbers = [_loop_count(f) for f in funcs]
    samples = np.empty((repeats, len(funcs)))
    for rep in range(repeats):
        for j, (func, number) in enumerate(zip(funcs, numbers)):
            start = time.perf_counter()
            for _ in range(number):
                func()
            samples[rep, j] = 1e9 * (time.perf_counter() - start) / number / n
    times = STAT(samples, axis=0)
    if STAT is np.min:
        return times, times / times[0]          # ratios of the best runs
    return times, np.median(samples / samples[:, :1], axis=0)


def run(sizes, repeats, seed=0):
    rng = np.random.default_rng(seed)
    header = (f"{'n':>10} {'fastdual':>9} {'sort-based':>10} {'partition':>9} {'sort':>7} "
              f"{'x part.':>7} {'x sort-b.':>9} {'max|diff|':>9}")
    print(f"problem (64): ns per element, {STAT.__name__} of {repeats} repeats")
    print(header)
    print("-" * len(header))
    for n in sizes:
        m, lower, upper, sigma, z, d = instance(n, rng)
        out = np.empty(n)
        a = project_box_hyperplane(m, lower, upper, sigma, z, d=d)
        diff = float(np.max(np.abs(a - sort_based_projection(m, lower, upper, sigma, z, d))))
        times, ratios = measure([
            lambda: project_box_hyperplane(m, lower, upper, sigma, z, d=d, out=out),
            lambda: sort_based_projection(m, lower, upper, sigma, z, d),
            lambda: np.partition(m, n // 2),
            lambda: np.sort(m),
        ], n, repeats)
        print(f"{n:>10.0e} {times[0]:>9.1f} {times[1]:>10.1f} {times[2]:>9.1f} {times[3]:>7.1f} "
              f"{1 / ratios[2]:>7.1f} {ratios[1]:>9.1f} {diff:>9.1e}", flush=True)


def run_ball(sizes, repeats, seed=1):
    """Second table: the elastic-net ball projection (Sec. 5.5.2), g ~ N(0, 1), gamma = 0.5,
    r = 0.05 n (about a third of the coordinates stay nonzero)."""
    rng = np.random.default_rng(seed)
    header = (f"{'n':>10} {'fastdual':>9} {'sort-based':>10} {'partition':>9} "
              f"{'x part.':>7} {'x sort-b.':>9} {'max|diff|':>9}")
    print(f"\nelastic-net ball: ns per element, {STAT.__name__} of {repeats} repeats")
    print(header)
    print("-" * len(header))
    for n in sizes:
        g = rng.standard_normal(n)
        gamma, r = 0.5, 0.05 * n
        out = np.empty(n)
        diff = float(np.max(np.abs(project_elastic_net_ball(g, gamma, r)
                                   - sort_based_ball(g, gamma, r))))
        times, ratios = measure([
            lambda: project_elastic_net_ball(g, gamma, r, out=out),
            lambda: sort_based_ball(g, gamma, r),
            lambda: np.partition(g, n // 2),
        ], n, repeats)
        print(f"{n:>10.0e} {times[0]:>9.1f} {times[1]:>10.1f} {times[2]:>9.1f} "
              f"{1 / ratios[2]:>7.1f} {ratios[1]:>9.1f} {diff:>9.1e}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n up to 1e6 and 3 repeats")
    parser.add_argument("--repeats", type=int, default=None, help="at least 3")
    parser.add_argument("--stat", choices=["median", "min"], default="median",
                        help="statistic over repeats (min: the best run, for a loaded machine)")
    args = parser.parse_args(argv)
    global STAT
    STAT = np.min if args.stat == "min" else np.median
    sizes = [10**k for k in range(3, 7 if args.quick else 8)]
    repeats = args.repeats or (3 if args.quick else 5)
    run(sizes, max(3, repeats))
    run_ball(sizes, max(3, repeats))


if __name__ == "__main__":
    main()
