"""Build script: compiles every Cython module under fastdual/ (every subpackage) with the
kernels' directives. No file lists: a new .pyx anywhere in the package is built."""
import glob
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "nonecheck": False,
}


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
                extra_compile_args=["-O3"],
            )
        )
    return cythonize(modules, compiler_directives=COMPILER_DIRECTIVES,
                     annotate=bool(os.environ.get("FASTDUAL_ANNOTATE")))


setup(ext_modules=extensions())
