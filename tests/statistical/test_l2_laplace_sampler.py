"""Slow statistical test of the exact L2-Laplace sampler (make test-slow).

Three tests on independent fixed-seed samples, each at level alpha = 1e-3, so the
false-failure rate of this file is at most 3e-3 (union bound) for a correct sampler:
1. Kolmogorov-Smirnov of ||z|| against Gamma(d, b) (the exact norm law);
2. uniformity of the direction: KS of u_1 (first coordinate of z/||z||) against its
   exact law, (u_1 + 1)/2 ~ Beta((d-1)/2, (d-1)/2);
3. independence of norm and direction: Spearman correlation of ||z|| and u_1.
"""

import numpy as np
import pytest
from scipy import stats

from noisygd.mechanisms.l2_laplace import l2_laplace_norm_distribution, sample_l2_laplace

ALPHA = 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("d,b", [(1, 0.5), (5, 2.0), (40, 0.01)])
def test_l2_laplace_exact_law(d, b):
    z = sample_l2_laplace(d, b, np.random.default_rng(1000 + d), size=200_000)
    r = np.linalg.norm(z, axis=1)
    assert stats.kstest(r, l2_laplace_norm_distribution(d, b).cdf).pvalue > ALPHA
    if d >= 2:
        u1 = z[:, 0] / r
        a = (d - 1) / 2
        assert stats.kstest((u1 + 1) / 2, stats.beta(a, a).cdf).pvalue > ALPHA
        assert stats.spearmanr(r, u1).pvalue > ALPHA
    else:
        # d = 1: symmetric Laplace; the sign is a fair coin.
        assert stats.binomtest(int(np.sum(z > 0)), z.size).pvalue > ALPHA
