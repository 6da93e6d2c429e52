"""Build of noisygd's compiled modules (all metadata is in pyproject.toml).

``noisygd.oracles._margin_kernels_c`` is the fused gradient kernel (CSR and dense rows) of
:mod:`noisygd.oracles.array`; ``noisygd.oracles._row_kernels_c`` the dense row scan of
:mod:`noisygd.oracles.rows` (norms, scale factors and the pre-release sums in one read), its
CSR squared norms, and the magnitude counts of :mod:`noisygd.mechanisms.feature_range`. Both
are optional: where no C compiler is available the install
still succeeds and the oracle uses SciPy and BLAS (same results up to rounding, slower).
"""

import sys

from setuptools import Extension, setup

FLAGS = [] if sys.platform == "win32" else ["-O3", "-fno-math-errno", "-ffp-contract=off"]
# glibc's libmvec (vector exp) where it exists: Linux; a failed build falls back (optional)
LIBMVEC = sys.platform.startswith("linux")
if LIBMVEC:
    FLAGS += ["-fopenmp-simd", "-DNOISYGD_LIBMVEC"]

setup(
    ext_modules=[
        Extension(
            "noisygd.oracles._margin_kernels_c",
            sources=["src/noisygd/oracles/_margin_kernels.c"],
            extra_compile_args=FLAGS,
            libraries=["mvec", "m"] if LIBMVEC else [],
            optional=True,
        ),
        Extension(
            "noisygd.oracles._row_kernels_c",
            sources=["src/noisygd/oracles/_row_kernels.c"],
            extra_compile_args=FLAGS,
            optional=True,
        ),
    ]
)
