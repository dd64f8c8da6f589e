"""One problem on one and on two threads: fastdual's n_jobs against Snap ML's n_jobs and
cyanure's n_threads (those installed), time to a relative suboptimality of 1e-4 and 1e-6.

    python -m benchmarks.threads [--datasets news20 rcv1like synth_sparse]
                                 [--problems logistic hinge squared_hinge] [--threads 1 2]
                                 [--alpha 1e-4] [--repeats 3] [--max-seconds 60]

The objective is the suite's (rows of X at unit norm, no intercept, the loss's mean plus
alpha/2 ||w||^2): Snap ML's regularizer is alpha n (its losses are summed), cyanure's lambda_1
is alpha (its l2 penalty is lambda_1/2 ||w||^2; its squared hinge is half fastdual's, so its
lambda is halved). The mappings are checked first on a small problem: a peer whose best
objective there is not within 1e-6 of fastdual's certified optimum is dropped with a line
saying so. Snap ML has no squared hinge; cyanure has no hinge (it needs a smooth loss).

Every solver runs from scratch at growing budgets (fastdual: SDCA's max_epochs with tol 0, its
one certificate the last epoch's; Snap ML and cyanure: max_iter), the same ladder as
benchmarks.sparse; P is computed outside the timing, and the time to a target is the least
time of the budgets reaching it. P* is the best P of every run and of fastdual's run to a
relative gap of 1e-10. "fastdual (certified)" is train(tol=1e-4, n_jobs=...): the time until
its own duality gap proves 1e-4. fastdual's n_jobs=2 runs the threads only on epochs of at
least sdca.PARALLEL_MIN_NNZ stored entries (docs/benchmarks.md M): news20 runs one thread.
The "speed-up" column is the one-thread time over the two-thread time of the same solver; the
floor is one X @ w plus one X.T @ a, measured in the same run.
"""
import argparse
import time
import warnings

import numpy as np

from benchmarks.sparse import curve, dataset, first_time  # (and one BLAS thread)
from benchmarks.timing import matvec_floor

TARGETS = (1e-4, 1e-6)
PROBLEMS = ("logistic", "hinge", "squared_hinge")


def losses(loss, y, z):
    margin = y * z
    if loss == "logistic":
        return np.logaddexp(0.0, -margin)
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - margin)
    return np.maximum(0.0, 1.0 - margin) ** 2


def primal(X, y, w, loss, alpha):
    w = np.asarray(w, dtype=np.float64).ravel()
    return float(np.mean(losses(loss, y, X @ w))) + 0.5 * alpha * float(w @ w)


def fits(loss, alpha, n, threads):
    """name -> fit(X, y, budget) -> coef, at `threads` threads each."""
    import fastdual
    out = {}

    def fastdual_fit(X, y, budget):
        return fastdual.train(X, y, loss=loss, alpha=alpha, solver="sdca", fit_intercept=False,
                              tol=0.0, max_epochs=budget, n_jobs=threads,
                              random_state=0).coef_.ravel()
    out["fastdual"] = fastdual_fit
    try:
        import snapml
        if loss in ("logistic", "hinge"):
            def snapml_fit(X, y, budget):
                common = dict(regularizer=alpha * n, max_iter=int(budget), tol=1e-15,
                              n_jobs=threads, fit_intercept=False, random_state=0)
                estimator = (snapml.LogisticRegression(dual=True, penalty="l2", **common)
                             if loss == "logistic" else snapml.SupportVectorMachine(**common))
                return np.ravel(estimator.fit(X, y).coef_)
            out["snapml"] = snapml_fit
    except ImportError:
        pass
    try:
        from cyanure.estimators import Classifier
        if loss in ("logistic", "squared_hinge"):
            def cyanure_fit(X, y, budget):
                scale = 0.5 if loss == "squared_hinge" else 1.0
                estimator = Classifier(loss="logistic" if loss == "logistic" else "sqhinge",
                                       penalty="l2", lambda_1=alpha * scale,
                                       fit_intercept=False, tol=1e-15, max_iter=int(budget),
                                       verbose=False, n_threads=threads)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return np.ravel(estimator.fit(X, y).get_weights())[:X.shape[1]]
            out["cyanure"] = cyanure_fit
    except ImportError:
        pass
    return out


def reference(X, y, loss, alpha, tol=1e-10):
    import fastdual
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastdual.train(X, y, loss=loss, alpha=alpha, fit_intercept=False, tol=tol,
                              max_epochs=100000, random_state=0)


def mapped_peers(loss, seed=0):
    """The peers whose best objective on a small problem is within 1e-6 of fastdual's
    certified optimum (the others' parameters do not map onto the objective)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((300, 40))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ rng.standard_normal(40) + 0.3 * rng.standard_normal(300) > 0, 1.0, -1.0)
    alpha = 1e-2
    p_star = primal(X, y, reference(X, y, loss, alpha, tol=1e-12).coef_, loss, alpha)
    kept = []
    for name, fit in fits(loss, alpha, X.shape[0], 1).items():
        if name == "fastdual":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            best = min(primal(X, y, fit(X, y, budget), loss, alpha) for budget in (100, 1000))
        if best <= p_star * (1 + 1e-6):
            kept.append(name)
        else:
            print(f"  ({name} dropped for {loss}: its best objective {best:.10g} against the "
                  f"optimum {p_star:.10g} on the mapping check)", flush=True)
    return kept


def certified_time(X, y, loss, alpha, threads, repeats):
    import fastdual
    times, model = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fastdual.train(X, y, loss=loss, alpha=alpha, fit_intercept=False, tol=1e-4,
                                   n_jobs=threads, random_state=0)
        times.append(time.perf_counter() - start)
        if times[0] > 1.0:
            break
    return float(np.median(times)) if model.relative_gap_ <= 1e-4 else None


def run_case(name, X, y, loss, alpha, threads, repeats, max_seconds, peers):
    def objective(coef):
        return primal(X, y, coef, loss, alpha)

    p_ref = objective(reference(X, y, loss, alpha).coef_)
    rows = {}
    for count in threads:
        for key, fit in fits(loss, alpha, X.shape[0], count).items():
            if key != "fastdual" and key not in peers:
                continue
            points = curve(fit, X, y, objective, repeats, max_seconds, p_ref)
            if points:
                rows[(key, count)] = points
        rows[("fastdual (certified)", count)] = certified_time(X, y, loss, alpha, count,
                                                                repeats)
    p_star = min([p_ref] + [p for key, points in rows.items() if isinstance(points, list)
                            for _, _, p in points])
    times = {key: ([first_time(points, p_star, t) for t in TARGETS]
                   if isinstance(points, list) else [points, None])
             for key, points in rows.items()}
    return {"case": f"{name} {loss}", "times": times, "floor": matvec_floor(X)["floor"]}


def fmt(t):
    return "-" if t is None else (f"{t:.3f}" if t < 10 else f"{t:.1f}")


def report(result, threads):
    print(f"\n{result['case']} (floor {result['floor'] * 1e3:.1f} ms)")
    print("| solver | threads | t(1e-4) s | t(1e-6) s | speed-up at 1e-4 "
          "| / fastest peer at 1e-4 |")
    print("|---|---:|---:|---:|---:|---:|")
    times = result["times"]
    solvers = sorted({key for key, _ in times}, key=lambda s: (not s.startswith("fastdual"), s))
    for count in threads:
        peers = [times[(s, count)][0] for s in solvers
                 if not s.startswith("fastdual") and (s, count) in times
                 and times[(s, count)][0] is not None]
        fastest = min(peers) if peers else None
        for solver in solvers:
            if (solver, count) not in times:
                continue
            t4, t6 = times[(solver, count)]
            one = times.get((solver, threads[0]), [None])[0]
            speed = (fmt(one / t4) if count != threads[0] and one is not None
                     and t4 is not None else "")
            ratio = (f"{t4 / fastest:.2f}" if solver.startswith("fastdual") and fastest
                     and t4 is not None else "")
            print(f"| {solver} | {count} | {fmt(t4)} | {fmt(t6)} | {speed} | {ratio} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["news20", "rcv1like", "synth_sparse"])
    parser.add_argument("--problems", nargs="+", choices=PROBLEMS, default=list(PROBLEMS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="a solver's budget ladder stops past this many seconds")
    args = parser.parse_args(argv)
    peers = {loss: mapped_peers(loss) for loss in args.problems}
    for name in args.datasets:
        X, y, _ = dataset(name)
        y = np.where(y > 0, 1.0, -1.0) if set(np.unique(y)) != {-1.0, 1.0} else y
        for loss in args.problems:
            result = run_case(name, X, y, loss, args.alpha, args.threads, args.repeats,
                              args.max_seconds, peers[loss])
            report(result, args.threads)


if __name__ == "__main__":
    main()
