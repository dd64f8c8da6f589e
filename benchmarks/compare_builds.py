"""A/B speed of two builds of fastdual, through the public API only, interleaved in one run.

    python -m benchmarks.compare_builds --python A=/path/to/python --python B=/path/to/python \
        [--datasets a9a news20 reuters_lasvm] [--losses hinge logistic] [--rounds 3]

Each interpreter must import its own fastdual (an installed one, or PYTHONPATH given as
A=/path/to/python:/path/to/src). The data sets are loaded once by this process (benchmarks.datasets)
and handed to workers as .npz files; each round runs every build once, alternating, in a fresh
process, so that both builds see the same machine state. Reported, per (data set, loss) at
alpha 1e-4, the median over rounds of each worker's
* epoch: (T(max_epochs=41) - T(max_epochs=1)) / 40 with tol=0 (only the last epoch checked),
  minimum over repeats of each T (the same work: the minimum is the least disturbed), i.e. one
  epoch of the full training call, setup and final certificate excluded;
* t(1e-4): median over repeats of a whole fastdual.train(..., tol=1e-4) call, certificate
  schedule included.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

WORKER = r"""
import json, sys, time
import numpy as np
import scipy.sparse as sp
import fastdual
path, losses, repeats = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
f = np.load(path)
X = sp.csr_matrix((f["data"], f["indices"], f["indptr"]), shape=tuple(f["shape"]))
y = f["y"]
out = {"version": fastdual.__version__}
def timed(**kw):
    t0 = time.perf_counter()
    model = fastdual.train(X, y, alpha=1e-4, random_state=0, **kw)
    return time.perf_counter() - t0, model
for loss in losses:
    t1 = [timed(loss=loss, tol=0.0, max_epochs=1)[0] for _ in range(repeats)]
    t41 = [timed(loss=loss, tol=0.0, max_epochs=41)[0] for _ in range(repeats)]
    runs = [timed(loss=loss, tol=1e-4) for _ in range(repeats)]
    out[loss] = {"epoch": (np.min(t41) - np.min(t1)) / 40,
                 "t_1e-4": float(np.median([t for t, _ in runs])),
                 "epochs_1e-4": runs[0][1].n_epochs_, "converged": bool(runs[0][1].converged_)}
print(json.dumps(out))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", required=True,
                        help="NAME=interpreter[:PYTHONPATH]")
    parser.add_argument("--datasets", nargs="+", default=["a9a", "news20", "reuters_lasvm"])
    parser.add_argument("--losses", nargs="+", default=["hinge", "logistic", "smooth_hinge"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    from . import datasets as D

    builds = []
    for spec in args.python:
        name, _, rest = spec.partition("=")
        exe, _, path = rest.partition(":")
        builds.append((name, exe, path))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in args.datasets:
            X, y = D.load(dataset)
            X = sp.csr_matrix(X)
            path = os.path.join(tmp, dataset + ".npz")
            np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr,
                     shape=np.array(X.shape), y=np.asarray(y, dtype=np.float64))
            for r in range(args.rounds):
                order = builds if r % 2 == 0 else builds[::-1]
                for name, exe, pythonpath in order:
                    out = subprocess.run(
                        [exe, "-c", WORKER, path, ",".join(args.losses), str(args.repeats)],
                        capture_output=True, text=True, cwd=tmp, check=True,
                        env={**env, "PYTHONPATH": pythonpath})
                    results.setdefault((dataset, name), []).append(json.loads(out.stdout))
    print("| data | loss | " + " | ".join(f"{n} epoch (ms)" for n, _, _ in builds) + " | ratio | "
          + " | ".join(f"{n} t(1e-4) (ms)" for n, _, _ in builds) + " | ratio |")
    print("|---|---|" + "---:|" * (2 * len(builds) + 2))
    for dataset in args.datasets:
        for loss in args.losses:
            epoch = [np.median([run[loss]["epoch"] for run in results[(dataset, n)]]) * 1e3
                     for n, _, _ in builds]
            t = [np.median([run[loss]["t_1e-4"] for run in results[(dataset, n)]]) * 1e3
                 for n, _, _ in builds]
            print(f"| {dataset} | {loss} | " + " | ".join(f"{e:.3g}" for e in epoch)
                  + f" | {epoch[-1] / epoch[0]:.2f} | " + " | ".join(f"{x:.3g}" for x in t)
                  + f" | {t[-1] / t[0]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
