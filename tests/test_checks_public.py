"""The argument checks of :mod:`noisygd._checks`: ``check_real``, ``check_positive``,
``check_nonnegative``, ``check_probability``, ``check_fraction``, ``check_scale``,
``check_positive_int``, ``check_bool`` and ``check_choice``.

The policy under test (module docstring): a value of the wrong *type* raises ``TypeError``
(bools and strings are never numbers, a float is never a count), a value of the right type
but a bad *value* raises ``ValueError``; accepted values come back as plain Python ``float``,
``int``, ``bool`` or ``str``, and every refusal names the parameter.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from noisygd._checks import (
    MAX_SCALE,
    check_bool,
    check_choice,
    check_fraction,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
    check_real,
    check_scale,
)

NAME = "my_param"
NAN = float("nan")
INF = float("inf")
TINY = 5e-324  # the smallest positive subnormal float64
BELOW_ONE = math.nextafter(1.0, 0.0)

#: Values of a wrong type for every real-number check: bools (Python and NumPy), strings,
#: complex numbers, None, containers and Decimal (not registered as ``numbers.Real``).
NOT_REAL = [True, False, np.bool_(True), "1.5", "nan", b"1", 1 + 0j, np.complex128(1.0), None,
            [0.5], np.array([0.5]), Decimal("0.5")]

REAL_CHECKS = [check_real, check_positive, check_nonnegative, check_probability, check_fraction,
               check_scale]


def _named(name: str = NAME) -> str:
    """The message prefix every refusal starts with: the parameter's name."""
    return re.escape(name) + " must"


def _same_float(a: float, b: float) -> bool:
    """Equal as floats, the sign of zero included."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


# ---------------------------------------------------------------------------------------------
# check_real


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0.0), (-3, -3.0), (2.5, 2.5), (-0.0, -0.0), (np.float32(0.5), 0.5),
     (np.float64(-1.25), -1.25), (np.int64(7), 7.0), (np.uint8(255), 255.0),
     (Fraction(1, 4), 0.25), (INF, INF), (-INF, -INF), (10**20, 1e20)],
)
def test_check_real_returns_a_python_float_of_the_same_value(value, expected) -> None:
    """Any real number (Python, NumPy, Fraction, signed zero, infinities) becomes a float."""
    out = check_real(NAME, value)
    assert type(out) is float
    assert _same_float(out, expected)


def test_check_real_accepts_nan_and_returns_nan() -> None:
    """check_real checks only the type: NaN passes (the range checks refuse it)."""
    out = check_real(NAME, np.float64(NAN))
    assert type(out) is float and math.isnan(out)


@pytest.mark.parametrize("check", REAL_CHECKS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("value", NOT_REAL, ids=repr)
def test_real_checks_refuse_non_numbers_with_type_error_naming_the_parameter(check, value) -> None:
    """Bools, strings, complex, None, containers, Decimal: TypeError naming the parameter."""
    with pytest.raises(TypeError, match=_named() + " be a real number"):
        check(NAME, value)


def test_long_values_are_shortened_in_the_message() -> None:
    """The refused value is quoted, cut to 60 characters with '...' when its repr is longer."""
    long_text = "x" * 200
    with pytest.raises(TypeError) as exc:
        check_real(NAME, long_text)
    shown = str(exc.value).split("got ", 1)[1]
    assert len(shown) == 60 and shown.endswith("...") and shown.startswith("'xxx")
    with pytest.raises(TypeError, match=re.escape("got 'short'")):
        check_real(NAME, "short")


# ---------------------------------------------------------------------------------------------
# check_positive, check_nonnegative


@pytest.mark.parametrize(
    "value", [TINY, 1, 0.5, 1e308, np.float32(3.0), np.int64(2), np.uint8(1), Fraction(1, 3)]
)
def test_check_positive_accepts_finite_positive_numbers_as_float(value) -> None:
    """Every finite number > 0 comes back as the float of the same value."""
    out = check_positive(NAME, value)
    assert type(out) is float and out == float(value) and out > 0


@pytest.mark.parametrize("value", [0, 0.0, -0.0, -TINY, -1, NAN, INF, -INF, np.float64(NAN),
                                   np.int64(0), np.float32(-1.0)], ids=repr)
def test_check_positive_refuses_zero_negatives_nan_and_infinities(value) -> None:
    """0 (of either sign), negatives, NaN and +-inf: ValueError naming the parameter."""
    with pytest.raises(ValueError, match=_named() + " be positive and finite"):
        check_positive(NAME, value)


@pytest.mark.parametrize("value", [0, 0.0, TINY, 1, 1e308, np.float32(2.0), np.int64(0)])
def test_check_nonnegative_accepts_zero_and_finite_positives(value) -> None:
    """Every finite number >= 0 comes back as the float of the same value."""
    out = check_nonnegative(NAME, value)
    assert type(out) is float and out == float(value) and out >= 0


def test_check_nonnegative_accepts_negative_zero() -> None:
    """-0.0 is >= 0: accepted (as a float equal to zero)."""
    out = check_nonnegative(NAME, -0.0)
    assert type(out) is float and out == 0.0


@pytest.mark.parametrize("value", [-TINY, -1, NAN, INF, -INF, np.float64(-0.5)], ids=repr)
def test_check_nonnegative_refuses_negatives_nan_and_infinities(value) -> None:
    """Negatives, NaN and +-inf: ValueError naming the parameter."""
    with pytest.raises(ValueError, match=_named() + r" be finite and >= 0"):
        check_nonnegative(NAME, value)


@pytest.mark.parametrize("check", [check_positive, check_nonnegative, check_scale],
                         ids=lambda f: f.__name__)
def test_an_integer_beyond_the_float_range_is_a_bad_value(check) -> None:
    """An int too large for a float is a real number out of range: ValueError by the policy."""
    with pytest.raises(ValueError, match=_named()):
        check(NAME, 10**400)


# ---------------------------------------------------------------------------------------------
# check_probability, check_fraction


@pytest.mark.parametrize("value", [TINY, 1e-12, 0.5, BELOW_ONE, np.float32(0.25),
                                   Fraction(1, 3)])
def test_check_probability_accepts_the_open_unit_interval(value) -> None:
    """Values strictly between 0 and 1 come back as the same float."""
    out = check_probability(NAME, value)
    assert type(out) is float and out == float(value) and 0.0 < out < 1.0


@pytest.mark.parametrize("value", [0, 0.0, -0.0, 1, 1.0, np.float64(1.0), -0.1, 1.5, NAN, INF,
                                   -INF], ids=repr)
def test_check_probability_refuses_the_endpoints_and_outside(value) -> None:
    """0, 1, outside values and NaN: ValueError naming the parameter and the interval."""
    with pytest.raises(ValueError, match=_named() + re.escape(" be in the open interval (0, 1)")):
        check_probability(NAME, value)


@pytest.mark.parametrize("value", [TINY, 0.5, BELOW_ONE, 1, 1.0, np.int64(1), np.float32(1.0)])
def test_check_fraction_accepts_the_half_open_interval(value) -> None:
    """By default (0, 1]: 1 (int, float or NumPy) is a valid sampling rate."""
    out = check_fraction(NAME, value)
    assert type(out) is float and out == float(value) and 0.0 < out <= 1.0


@pytest.mark.parametrize("value", [TINY, 0.5, BELOW_ONE])
def test_check_fraction_open_right_accepts_the_open_interval(value) -> None:
    """closed_right=False: values strictly inside (0, 1) are accepted unchanged."""
    assert check_fraction(NAME, value, closed_right=False) == value


@pytest.mark.parametrize(
    ("value", "closed_right"),
    [(0, True), (-0.0, True), (-0.5, True), (1.0 + 2**-52, True), (2, True), (NAN, True),
     (INF, True), (0.0, False), (1, False), (1.0, False), (np.float64(1.0), False),
     (NAN, False)],
    ids=repr,
)
def test_check_fraction_refuses_outside_its_interval(value, closed_right) -> None:
    """Outside (0, 1] (or (0, 1)) and NaN: ValueError naming the parameter and the interval."""
    interval = "(0, 1]" if closed_right else "(0, 1)"
    with pytest.raises(ValueError, match=_named() + re.escape(f" be in {interval}")):
        check_fraction(NAME, value, closed_right=closed_right)


def test_fraction_and_probability_agree_inside_and_differ_only_at_one() -> None:
    """check_fraction(closed_right=False) and check_probability accept the same grid."""
    grid = [-1.0, -0.0, 0.0, TINY, 0.3, BELOW_ONE, 1.0, 1.0 + 2**-52, NAN]

    def accepts(check, v, **kw) -> bool:
        try:
            check(NAME, v, **kw)
        except ValueError:
            return False
        return True

    for v in grid:
        assert accepts(check_probability, v) == accepts(check_fraction, v, closed_right=False)
        assert accepts(check_fraction, v) == (accepts(check_probability, v) or v == 1.0)


# ---------------------------------------------------------------------------------------------
# check_scale


@pytest.mark.parametrize("value", [TINY, 1, 1e100, MAX_SCALE, np.float32(2.0), np.int64(3)])
def test_check_scale_accepts_up_to_max_scale_inclusive(value) -> None:
    """(0, MAX_SCALE]: MAX_SCALE itself is accepted, as a float."""
    out = check_scale(NAME, value)
    assert type(out) is float and out == float(value)


def test_max_scale_squared_is_a_finite_float() -> None:
    """The documented reason for MAX_SCALE: the losses square it and stay finite."""
    assert MAX_SCALE == 1e150
    assert math.isfinite(MAX_SCALE**2)


@pytest.mark.parametrize("value", [math.nextafter(MAX_SCALE, INF), 1e200, 1e308, 10**160])
def test_check_scale_refuses_values_above_max_scale(value) -> None:
    """Finite but above MAX_SCALE: ValueError naming the parameter and the bound."""
    with pytest.raises(ValueError, match=_named() + " be at most 1e\\+150"):
        check_scale(NAME, value)


@pytest.mark.parametrize("value", [0, -0.0, -1.0, NAN, INF], ids=repr)
def test_check_scale_refuses_non_positive_nan_and_inf_as_check_positive_does(value) -> None:
    """Below the range it refuses what check_positive refuses, with the same message."""
    with pytest.raises(ValueError, match=_named() + " be positive and finite"):
        check_scale(NAME, value)


# ---------------------------------------------------------------------------------------------
# check_positive_int


@pytest.mark.parametrize("value", [1, 400, 10**400, np.int64(5), np.int8(1), np.uint64(2**63)])
def test_check_positive_int_returns_a_python_int_of_the_same_value(value) -> None:
    """Python and NumPy integers >= 1 come back as the same value, type int."""
    out = check_positive_int(NAME, value)
    assert type(out) is int and out == int(value)


@pytest.mark.parametrize("value", [400.0, 400.7, 1.0, np.float64(2.0), Fraction(4, 1), True,
                                   False, np.bool_(True), "3", None, NAN, INF, 1 + 0j, [1]],
                         ids=repr)
def test_check_positive_int_refuses_non_integers_with_type_error(value) -> None:
    """Floats (even integral ones), Fractions, bools, strings, None: TypeError naming it."""
    with pytest.raises(TypeError, match=_named() + " be an integer, got"):
        check_positive_int(NAME, value)


@pytest.mark.parametrize("value", [0, -1, np.int64(-5), -(10**30)])
def test_check_positive_int_refuses_below_the_default_minimum_of_one(value) -> None:
    """Integers < 1: ValueError naming the parameter and the minimum."""
    with pytest.raises(ValueError, match=_named() + " be an integer >= 1, got"):
        check_positive_int(NAME, value)


@pytest.mark.parametrize("minimum", [-3, 0, 2, 10])
def test_check_positive_int_minimum_is_inclusive(minimum) -> None:
    """With minimum=m, m is accepted and m - 1 refused (message quoting m)."""
    assert check_positive_int(NAME, minimum, minimum=minimum) == minimum
    assert check_positive_int(NAME, np.int32(minimum + 1), minimum=minimum) == minimum + 1
    with pytest.raises(ValueError, match=_named() + f" be an integer >= {minimum}, got"):
        check_positive_int(NAME, minimum - 1, minimum=minimum)


# ---------------------------------------------------------------------------------------------
# check_bool


@pytest.mark.parametrize(("value", "expected"),
                         [(True, True), (False, False), (np.bool_(True), True),
                          (np.bool_(False), False), (np.array([True])[0], True)])
def test_check_bool_returns_a_python_bool(value, expected) -> None:
    """Python and NumPy bools come back as the Python bool of the same truth value."""
    out = check_bool(NAME, value)
    assert type(out) is bool and out is expected


@pytest.mark.parametrize("value", [0, 1, 0.0, 1.0, np.int64(1), "True", "false", None,
                                   np.array([True]), [True]], ids=repr)
def test_check_bool_refuses_numbers_strings_and_containers(value) -> None:
    """0 and 1, strings, None, one-element arrays: TypeError naming the parameter."""
    with pytest.raises(TypeError, match=_named() + " be True or False, got"):
        check_bool(NAME, value)


# ---------------------------------------------------------------------------------------------
# check_choice

CHOICES = ("auto", "theorem", "none")


@pytest.mark.parametrize("value", CHOICES)
def test_check_choice_returns_the_choice_unchanged(value) -> None:
    """Each member of choices is returned, equal and a str."""
    out = check_choice(NAME, value, CHOICES)
    assert out == value and isinstance(out, str)


def test_check_choice_accepts_a_numpy_string_equal_to_a_choice() -> None:
    """A numpy.str_ is a str: it is accepted when it equals a choice."""
    out = check_choice(NAME, np.str_("auto"), CHOICES)
    assert out == "auto" and isinstance(out, str)


@pytest.mark.parametrize("value", ["Auto", "AUTO", " auto", "auto ", "", "theorem4", "None"])
def test_check_choice_is_exact_and_refuses_other_strings_listing_the_choices(value) -> None:
    """Matching is exact (case and spaces): ValueError naming the parameter and the choices."""
    with pytest.raises(ValueError, match=_named() + re.escape(f" be one of {CHOICES}, got")):
        check_choice(NAME, value, CHOICES)


@pytest.mark.parametrize("value", [None, 0, 1.0, True, b"auto", ["auto"], ("auto",)], ids=repr)
def test_check_choice_refuses_non_strings_with_type_error(value) -> None:
    """A non-string (None, a number, bytes, a list): TypeError naming the parameter."""
    with pytest.raises(TypeError, match=_named() + re.escape(f" be a string, one of {CHOICES}")):
        check_choice(NAME, value, CHOICES)


def test_check_choice_with_no_choices_refuses_every_string() -> None:
    """An empty tuple of choices accepts nothing."""
    with pytest.raises(ValueError, match=_named() + re.escape(" be one of ()")):
        check_choice(NAME, "auto", ())


# ---------------------------------------------------------------------------------------------
# every check: the parameter's name


@pytest.mark.parametrize(
    ("check", "bad", "exc"),
    [(check_real, "x", TypeError), (check_positive, 0.0, ValueError),
     (check_nonnegative, -1.0, ValueError), (check_probability, 1.0, ValueError),
     (check_fraction, 2.0, ValueError), (check_scale, 1e200, ValueError),
     (check_positive_int, 0, ValueError), (check_positive_int, 1.0, TypeError),
     (check_bool, 1, TypeError), (lambda n, v: check_choice(n, v, ("a",)), "b", ValueError)],
)
@pytest.mark.parametrize("name", ["alpha", "method_options['l2']", "X[0]"])
def test_each_refusal_starts_with_the_name_it_was_given(check, bad, exc, name) -> None:
    """The name passed (with brackets and quotes, quoted literally) starts the message."""
    with pytest.raises(exc) as info:
        check(name, bad)
    assert str(info.value).startswith(name + " must ")
