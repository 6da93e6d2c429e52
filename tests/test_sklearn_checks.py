"""scikit-learn's estimator checks, minus those that contradict differential privacy."""

from __future__ import annotations

import warnings

import pytest
from sklearn.utils.estimator_checks import check_estimator

from noisygd.estimators import (
    EXPECTED_FAILED_CHECKS,
    DPHuberRegressor,
    DPLinearRegression,
    DPLogisticRegression,
)


@pytest.mark.parametrize(
    "estimator",
    [DPLogisticRegression(), DPHuberRegressor(), DPLinearRegression()],
    ids=lambda e: type(e).__name__,
)
def test_check_estimator(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(
            estimator,
            expected_failed_checks=EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {}),
        )
