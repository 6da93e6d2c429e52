"""check_row_norm_bound: refuses rows above the bound without revealing their norm."""

import numpy as np
import pytest

from noisygd.algorithms.base import check_row_norm_bound
from noisygd.exceptions import AssumptionError


def test_accepts_rows_within_the_bound_up_to_rounding():
    X = np.array([[0.6, 0.8], [0.0, 0.0]])  # norms 1 and 0
    check_row_norm_bound(X, 1.0)
    check_row_norm_bound(X * (1 + 1e-12), 1.0)
    check_row_norm_bound(np.zeros((0, 2)), 1.0)


def test_refuses_and_does_not_print_the_data_norm():
    X = np.array([[0.3, 0.4], [1.2345, 0.0]])
    with pytest.raises(AssumptionError, match=r"row_norm_bound=1\.0; see") as err:
        check_row_norm_bound(X, 1.0, "; see docs")
    assert "1.2345" not in str(err.value)
