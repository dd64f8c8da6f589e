"""Every LIBLINEAR type on the command line, on the files as distributed: `fastdual train -s T`
against LIBLINEAR's train with the same options, wall time of each in its own process.

    python -m benchmarks.cli_types [--files news20 a9a letter sector abalone rcv1like]
                                   [--types 0 1 2 3 4 5 6 7 11 12 13] [--C 1] [--repeats 1]

Each file is decompressed once to a temporary folder (rcv1like: benchmarks.datasets'
make_sparse_text at 20,000 x 100,000, 80 nonzeros a row, written in LIBSVM format with rows
of lognormal lengths, as raw text gives them). The classification files run the types 0-7, the
regression file (abalone) the types 11-13. For each (file, type): LIBLINEAR's train through
liblinear-official's Python binding (svm_read_problem, train with `-s T -c C -B 1 -q`,
then save_model, as LIBLINEAR's train writes its model file;
its reading and training times are reported too, the binding's reader being Python's),
and `fastdual train -s T -c C -B 1` (its defaults: -e is fastdual's certified relative gap
1e-4, max_epochs 1000), both with one BLAS / OpenMP thread, the median wall time of
`repeats` runs each, start-up and reading included (fastdual's bytecode compiled first, as an
installed wheel has it: datasets.compile_package); the ratio fastdual / LIBLINEAR, and the
number of WARNING lines fastdual printed (a class or problem that stopped at max_epochs before
its certificate reached -e). LIBLINEAR's default stopping rules (-e 0.01 for the primal
solvers, 0.1 for the dual ones) are looser than fastdual's certificate: where the ratio is
above 1 the note says what fastdual certified.
"""
import argparse
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks.datasets import compile_package, data_dir, make_sparse_text

FILES = {"news20": "news20.xz", "a9a": "a9a.xz", "letter": "letter.scale.xz",
         "sector": "sector.scale.xz", "abalone": "abalone_scale.xz", "rcv1like": None}
REGRESSION = {"abalone"}
CLASSIFICATION_TYPES = [0, 1, 2, 3, 4, 5, 6, 7]
REGRESSION_TYPES = [11, 12, 13]

LIBLINEAR_SCRIPT = """
import sys, time
from liblinear.liblinearutil import svm_read_problem, train, problem, parameter, save_model
start = time.perf_counter()
y, x = svm_read_problem(sys.argv[1])
read = time.perf_counter() - start
start = time.perf_counter()
model = train(problem(y, x, bias=1), parameter(sys.argv[2]))
print(read, time.perf_counter() - start)
if len(sys.argv) > 3:
    save_model(sys.argv[3], model)
"""


def liblinear_gap(path, model_path, C):
    """The certified relative duality gap of LIBLINEAR's model on its training file (the sum of
    one-vs-rest's binary objectives, or the joint one for -s 4), by fastdual.duality_gap."""
    import fastdual
    from fastdual.formats import load_liblinear
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(path, zero_based=False)
    model = load_liblinear(model_path)
    if model.coef_.shape[-1] < X.shape[1]:
        X = X[:, :model.coef_.shape[-1]]
    return fastdual.duality_gap(X, y, model, C=C).relative_gap


def write_rcv1like(path):
    X, y = make_sparse_text(n=20_000, d=100_000, nnz_per_row=80, seed=0)
    lengths = np.random.default_rng(1).lognormal(mean=3.0, sigma=1.0, size=X.shape[0])
    with open(path, "w") as out:
        for i in range(X.shape[0]):
            start, end = X.indptr[i], X.indptr[i + 1]
            cells = " ".join(f"{j + 1}:{v * lengths[i]:.6g}"
                             for j, v in zip(X.indices[start:end], X.data[start:end]))
            out.write(f"{int(y[i])} {cells}\n")


def materialise(name, folder):
    path = os.path.join(folder, name)
    if FILES[name] is None:
        write_rcv1like(path)
    else:
        with lzma.open(os.path.join(data_dir(), FILES[name])) as f, open(path, "wb") as out:
            shutil.copyfileobj(f, out)
    return path


def wall(command, env):
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="+", default=list(FILES))
    parser.add_argument("--types", nargs="+", type=int,
                        default=CLASSIFICATION_TYPES + REGRESSION_TYPES)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--match", action="store_true",
                        help="also certify LIBLINEAR's model (fastdual.duality_gap) and run "
                             "fastdual with -e set to its relative gap: equal certified accuracy")
    args = parser.parse_args(argv)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    compile_package()
    fastdual_cli = os.path.join(os.path.dirname(sys.executable), "fastdual")
    command = [fastdual_cli] if os.path.exists(fastdual_cli) else [sys.executable, "-m",
                                                                   "fastdual"]
    print("| file | -s | LIBLINEAR wall (s) | of which read, train (s) | fastdual wall (s) | "
          "fastdual / LIBLINEAR | fastdual's WARNING lines |"
          + (" LIBLINEAR's model: certified relative gap | fastdual at -e that gap (s) | "
             "ratio |" if args.match else ""))
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if args.match else ""))
    ratios = []
    folder = tempfile.mkdtemp()
    try:
        for name in args.files:
            path = materialise(name, folder)
            kinds = REGRESSION_TYPES if name in REGRESSION else CLASSIFICATION_TYPES
            for s in [t for t in args.types if t in kinds]:
                options = f"-s {s} -c {args.C:g} -B 1"
                theirs, parts, ours, warned = [], [], [], 0
                for _ in range(args.repeats):
                    model_path = os.path.join(folder, "liblinear.model")
                    seconds, done = wall([sys.executable, "-c", LIBLINEAR_SCRIPT, path,
                                          options + " -q", model_path], env)
                    if done.returncode:
                        raise RuntimeError(done.stderr)
                    theirs.append(seconds)
                    parts.append(tuple(map(float, done.stdout.split())))
                    seconds, done = wall(command + ["train"] + options.split()
                                         + [path, os.path.join(folder, "model")], env)
                    if done.returncode:
                        raise RuntimeError(done.stdout + done.stderr)
                    ours.append(seconds)
                    warned = (done.stdout + done.stderr).count("WARNING")
                a, b = statistics.median(theirs), statistics.median(ours)
                ratios.append(b / a)
                read, train = np.median(np.array(parts), axis=0)
                row = (f"| {name} | {s} | {a:.2f} | {read:.2f}, {train:.2f} | {b:.2f} | "
                       f"{b / a:.2f} | {warned} |")
                if args.match:
                    gap = liblinear_gap(path, model_path, args.C)
                    seconds, done = wall(command + ["train"] + options.split()
                                         + ["-e", f"{gap:.3g}", path,
                                            os.path.join(folder, "model")], env)
                    row += f" {gap:.2g} | {seconds:.2f} | {seconds / a:.2f} |"
                print(row, flush=True)
    finally:
        shutil.rmtree(folder)
    if ratios:
        print(f"\ngeo-mean fastdual / LIBLINEAR {np.exp(np.mean(np.log(ratios))):.2f}, worst "
              f"{max(ratios):.2f}, {sum(r <= 1.0 for r in ratios)} of {len(ratios)} within "
              f"LIBLINEAR's wall time")


if __name__ == "__main__":
    main()
