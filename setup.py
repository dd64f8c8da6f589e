"""Build script: compiles every Cython module under fastdual/ (every subpackage) with the
kernels' directives. No file lists: a new .pyx anywhere in the package is built.

The modules in OPENMP_MODULES (the parallel epochs) are compiled and linked with OpenMP when the
compiler has it (checked by compiling and linking a small program first); otherwise, or with
FASTDUAL_NO_OPENMP=1 in the environment, they are built without it and run their blocks on one
thread (each says so in its OPENMP attribute)."""
import glob
import os
import shutil
import sys
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "nonecheck": False,
}

OPENMP_MODULES = {"fastdual.solvers._sdca_parallel"}

OPENMP_PROBE = """
#include <omp.h>
int main(void) {
    int n = 0;
    #pragma omp parallel reduction(+:n)
    n += 1;
    return n > 0 && omp_get_max_threads() > 0 ? 0 : 1;
}
"""


def extensions():
    modules = []
    for path in sorted(glob.glob(os.path.join("fastdual", "**", "*.pyx"), recursive=True)):
        name = os.path.splitext(path)[0].replace(os.sep, ".")
        modules.append(
            Extension(
                name,
                [path],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                # no fused multiply-adds the code did not write: Dekker's and Knuth's exact
                # sums (rows.pxd two_product, two_sum_add) need every product rounded, which a
                # build with -march=native would otherwise contract away
                extra_compile_args=["-O3", "-ffp-contract=off"],
            )
        )
    return cythonize(modules, compiler_directives=COMPILER_DIRECTIVES,
                     annotate=bool(os.environ.get("FASTDUAL_ANNOTATE")))


def openmp_flag(compiler):
    """The compiler's OpenMP flag if a small OpenMP program compiles and links with it, else
    None (and a note on stderr)."""
    if os.environ.get("FASTDUAL_NO_OPENMP"):
        return None
    flag = "/openmp" if compiler.compiler_type == "msvc" else "-fopenmp"
    work = tempfile.mkdtemp()
    try:
        source = os.path.join(work, "probe.c")
        with open(source, "w") as handle:
            handle.write(OPENMP_PROBE)
        objects = compiler.compile([source], output_dir=work, extra_postargs=[flag])
        compiler.link_executable(objects, "probe", output_dir=work, extra_postargs=[flag])
        return flag
    except Exception:    # any compile or link failure: build without OpenMP
        print("fastdual: the compiler has no OpenMP; the parallel SDCA epochs run on one "
              "thread", file=sys.stderr)
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


class BuildExt(build_ext):
    def build_extensions(self):
        flag = openmp_flag(self.compiler)
        if flag is not None:
            for extension in self.extensions:
                if extension.name in OPENMP_MODULES:
                    extension.extra_compile_args = extension.extra_compile_args + [flag]
                    extension.extra_link_args = extension.extra_link_args + [flag]
        super().build_extensions()


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
