"""The ``method_options`` checks of :mod:`noisygd.solvers.options`: ``check_positive_option``,
``check_nonnegative_option``, ``check_step_rule_option``, ``check_momentum_option``,
``check_choice_option``, ``check_optional_choice``, ``check_horizon_option``,
``check_sharp_option``, ``check_pilot_option``, ``check_l2_option``, ``check_start_option`` and
``check_shares_option``.

Each is called as ``check(label, value)``; it returns nothing useful and refuses a bad value
with ``TypeError`` (wrong type) or ``ValueError`` (bad value) whose message names the option.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from noisygd.solvers.options import (
    MAX_OPTION_SCALE,
    check_choice_option,
    check_horizon_option,
    check_l2_option,
    check_momentum_option,
    check_nonnegative_option,
    check_optional_choice,
    check_pilot_option,
    check_positive_option,
    check_shares_option,
    check_sharp_option,
    check_start_option,
    check_step_rule_option,
)

LABEL = "method_options['opt']"
NAN = float("nan")
INF = float("inf")
TINY = 5e-324
ABOVE_MAX = math.nextafter(1e100, INF)
BELOW_ONE = math.nextafter(1.0, 0.0)


def _named(label: str = LABEL) -> str:
    """A regex for the start of a refusal: the option's label, then 'must'."""
    return re.escape(label) + " must"


# ---------------------------------------------------------------------------------------------
# check_positive_option, check_nonnegative_option


def test_max_option_scale_is_the_documented_bound() -> None:
    """The docstrings' upper end 10^100."""
    assert MAX_OPTION_SCALE == 1e100


@pytest.mark.parametrize("value", [TINY, 1, 0.5, 1e100, np.float32(2.0), np.int64(3)])
def test_check_positive_option_accepts_the_range_up_to_1e100(value) -> None:
    """(0, 1e100]: the upper end itself is accepted; nothing is returned."""
    assert check_positive_option(LABEL, value) is None


@pytest.mark.parametrize(("value", "message"),
                         [(0, "be positive and finite"), (-0.0, "be positive and finite"),
                          (-1.0, "be positive and finite"), (NAN, "be positive and finite"),
                          (INF, "be positive and finite"),
                          (ABOVE_MAX, r"be at most 1e\+100"), (1e300, r"be at most 1e\+100")],
                         ids=repr)
def test_check_positive_option_refuses_outside_the_range(value, message) -> None:
    """0, negatives, NaN, inf and anything above 1e100: ValueError naming the option."""
    with pytest.raises(ValueError, match=_named() + " " + message):
        check_positive_option(LABEL, value)


@pytest.mark.parametrize("value", [0, 0.0, -0.0, TINY, 1e100, np.int64(0), np.float32(0.5)])
def test_check_nonnegative_option_accepts_zero_to_1e100(value) -> None:
    """[0, 1e100], -0.0 and NumPy scalars included."""
    assert check_nonnegative_option(LABEL, value) is None


@pytest.mark.parametrize(("value", "message"),
                         [(-TINY, "be finite and >= 0"), (-1, "be finite and >= 0"),
                          (NAN, "be finite and >= 0"), (INF, "be finite and >= 0"),
                          (ABOVE_MAX, r"be at most 1e\+100")], ids=repr)
def test_check_nonnegative_option_refuses_outside_the_range(value, message) -> None:
    """Negatives, NaN, inf and anything above 1e100: ValueError naming the option."""
    with pytest.raises(ValueError, match=_named() + " " + message):
        check_nonnegative_option(LABEL, value)


@pytest.mark.parametrize(
    "check",
    [check_positive_option, check_nonnegative_option, check_momentum_option, check_sharp_option,
     check_l2_option],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("value", [True, False, np.bool_(True), None, 1 + 0j, [0.5]], ids=repr)
def test_numeric_options_refuse_non_numbers_with_type_error(check, value) -> None:
    """Bools (never numbers), None, complex and lists: TypeError naming the option."""
    with pytest.raises(TypeError, match=_named() + " be a real number"):
        check(LABEL, value)


@pytest.mark.parametrize(
    "check",
    [check_positive_option, check_nonnegative_option, check_momentum_option, check_sharp_option],
    ids=lambda f: f.__name__,
)
def test_numeric_options_refuse_numeric_strings_with_type_error(check) -> None:
    """A string that reads as a number is still not a number."""
    with pytest.raises(TypeError, match=_named() + " be a real number"):
        check(LABEL, "0.5")


# ---------------------------------------------------------------------------------------------
# check_step_rule_option


@pytest.mark.parametrize("value", ["auto", "theorem4", TINY, 0.01, 3, np.float64(0.5)])
def test_check_step_rule_option_accepts_the_two_rules_and_positive_steps(value) -> None:
    """'auto', 'theorem4' or a finite step size > 0."""
    assert check_step_rule_option(LABEL, value) is None


@pytest.mark.parametrize("value", ["Auto", "theorem", "", "0.1"])
def test_check_step_rule_option_refuses_other_strings_listing_the_rules(value) -> None:
    """Any other string: ValueError naming the option and both rules."""
    with pytest.raises(ValueError, match=_named() + re.escape(" be one of ('auto', 'theorem4')")):
        check_step_rule_option(LABEL, value)


@pytest.mark.parametrize("value", [0, -0.0, -0.1, NAN, INF], ids=repr)
def test_check_step_rule_option_refuses_non_positive_or_non_finite_steps(value) -> None:
    """A step size must be > 0 and finite: ValueError naming the option."""
    with pytest.raises(ValueError, match=_named() + " be positive and finite"):
        check_step_rule_option(LABEL, value)


@pytest.mark.parametrize("value", [True, None, b"auto", [0.1]], ids=repr)
def test_check_step_rule_option_refuses_other_types(value) -> None:
    """Bools, None, bytes, lists: TypeError naming the option."""
    with pytest.raises(TypeError, match=_named() + " be a real number"):
        check_step_rule_option(LABEL, value)


# ---------------------------------------------------------------------------------------------
# check_momentum_option


@pytest.mark.parametrize("value", [0, 0.0, -0.0, 0.9, BELOW_ONE, np.float32(0.5), np.int64(0)])
def test_check_momentum_option_accepts_zero_up_to_but_not_one(value) -> None:
    """[0, 1): 0 (either sign) is accepted, the float just below 1 too."""
    assert check_momentum_option(LABEL, value) is None


@pytest.mark.parametrize("value", [1, 1.0, np.float64(1.0), -TINY, -0.5, 2, NAN, INF, -INF],
                         ids=repr)
def test_check_momentum_option_refuses_one_negatives_and_nan(value) -> None:
    """1, negatives, NaN, infinities: ValueError naming the option and [0, 1)."""
    with pytest.raises(ValueError, match=_named() + re.escape(" be in [0, 1)")):
        check_momentum_option(LABEL, value)


# ---------------------------------------------------------------------------------------------
# check_choice_option, check_optional_choice, check_horizon_option


def test_check_choice_option_builds_a_check_for_its_own_choices() -> None:
    """The check accepts exactly its choices; two checks do not share theirs."""
    ab, cd = check_choice_option("a", "b"), check_choice_option("c", "d")
    for v in ("a", "b", np.str_("a")):
        assert ab(LABEL, v) is None
    for v in ("c", "d"):
        assert cd(LABEL, v) is None
        with pytest.raises(ValueError, match=_named() + re.escape(" be one of ('a', 'b')")):
            ab(LABEL, v)
    with pytest.raises(ValueError, match=_named() + re.escape(" be one of ('c', 'd')")):
        cd(LABEL, "a")


@pytest.mark.parametrize("value", [None, 0, True, b"a", ["a"]], ids=repr)
def test_check_choice_option_refuses_non_strings_none_included(value) -> None:
    """None is not a choice here: TypeError naming the option."""
    with pytest.raises(TypeError, match=_named() + " be a string"):
        check_choice_option("a", "b")(LABEL, value)


def test_check_optional_choice_accepts_none_and_its_choices() -> None:
    """None or one of the choices; other strings ValueError, other types TypeError."""
    check = check_optional_choice("x", "y")
    for v in (None, "x", "y"):
        assert check(LABEL, v) is None
    with pytest.raises(ValueError, match=_named() + re.escape(" be one of ('x', 'y')")):
        check(LABEL, "z")
    with pytest.raises(TypeError, match=_named() + " be a string"):
        check(LABEL, 0)


def test_optional_choice_and_choice_option_differ_only_on_none() -> None:
    """On every non-None value the two checks agree (accept, or the same exception)."""
    plain, opt = check_choice_option("p", "q"), check_optional_choice("p", "q")

    def outcome(check, v):
        try:
            check(LABEL, v)
        except (TypeError, ValueError) as e:
            return type(e), str(e)
        return None

    for v in ("p", "q", "r", "", 1, 1.5, False, b"p"):
        assert outcome(plain, v) == outcome(opt, v)
    assert outcome(opt, None) is None and outcome(plain, None)[0] is TypeError


@pytest.mark.parametrize("value", [None, "ridge"])
def test_check_horizon_option_accepts_none_and_ridge(value) -> None:
    """The horizon is the plan's own (None) or 'ridge'."""
    assert check_horizon_option(LABEL, value) is None


@pytest.mark.parametrize(("value", "exc"),
                         [("Ridge", ValueError), ("none", ValueError), ("", ValueError),
                          (0, TypeError), (False, TypeError), (10, TypeError)], ids=repr)
def test_check_horizon_option_refuses_everything_else(value, exc) -> None:
    """Other strings ValueError listing ('ridge',); non-strings TypeError; both name it."""
    with pytest.raises(exc, match=_named() + ".*" + re.escape("('ridge',)")):
        check_horizon_option(LABEL, value)


# ---------------------------------------------------------------------------------------------
# check_sharp_option


@pytest.mark.parametrize("value", [TINY, 0.5, 1, 1.0, np.float32(0.25), np.int64(1)])
def test_check_sharp_option_accepts_the_half_open_unit_interval(value) -> None:
    """(0, 1]: the ratio 1 (no sharpening) is accepted."""
    assert check_sharp_option(LABEL, value) is None


@pytest.mark.parametrize("value", [0, -0.0, -0.5, 1.0 + 2**-52, 2, NAN, INF], ids=repr)
def test_check_sharp_option_refuses_outside_the_interval(value) -> None:
    """0, negatives, > 1, NaN, inf: ValueError naming the option and (0, 1]."""
    with pytest.raises(ValueError, match=_named() + re.escape(" be in (0, 1]")):
        check_sharp_option(LABEL, value)


# ---------------------------------------------------------------------------------------------
# check_pilot_option

PILOT = re.escape("method_options['distance_pilot']")


@pytest.mark.parametrize("value", [True, False, None, 0, 0.0, TINY, 0.1, 0.5, np.float64(0.3)],
                         ids=repr)
def test_check_pilot_option_accepts_flags_none_and_shares_up_to_one_half(value) -> None:
    """True, False, None, 0 (no pilot) or a share in (0, 0.5]."""
    assert check_pilot_option(LABEL, value) is None


@pytest.mark.parametrize(("value", "message"),
                         [(math.nextafter(0.5, 1.0), "be at most 0.5"), (1, "be at most 0.5"),
                          (-0.1, "be positive and finite"), (NAN, "be positive and finite"),
                          (INF, "be positive and finite")], ids=repr)
def test_check_pilot_option_refuses_bad_shares_naming_distance_pilot(value, message) -> None:
    """Above 0.5, negative, NaN or inf: ValueError naming method_options['distance_pilot']."""
    with pytest.raises(ValueError, match=PILOT + " must " + message):
        check_pilot_option(LABEL, value)


@pytest.mark.parametrize("value", ["0.1", "yes", [0.1], b"x", 1j], ids=repr)
def test_check_pilot_option_refuses_non_numbers_naming_distance_pilot(value) -> None:
    """Strings, lists, bytes, complex are refused with a message naming the option."""
    with pytest.raises((TypeError, ValueError), match=PILOT + " must be a share in"):
        check_pilot_option(LABEL, value)


def test_check_pilot_option_names_distance_pilot_whatever_the_label() -> None:
    """The label is unused: the message names the one key this check is for (docstring)."""
    with pytest.raises(ValueError) as exc:
        check_pilot_option("some_other_label", 0.9)
    assert "method_options['distance_pilot']" in str(exc.value)
    assert "some_other_label" not in str(exc.value)


@pytest.mark.parametrize("value", [np.float32(0.25), np.int64(0)], ids=repr)
def test_check_pilot_option_accepts_numpy_scalars_like_python_numbers(value) -> None:
    """A NumPy float32 share, or a NumPy zero, is accepted as the same Python number is."""
    assert check_pilot_option(LABEL, value) is None


# ---------------------------------------------------------------------------------------------
# check_l2_option


@pytest.mark.parametrize("value", ["auto", np.str_("auto"), 0, -0.0, 1e-8, 1e100, np.int64(2)],
                         ids=repr)
def test_check_l2_option_accepts_auto_and_zero_to_1e100(value) -> None:
    """'auto' (the planned ridge) or a number in [0, 1e100]."""
    assert check_l2_option(LABEL, value) is None


@pytest.mark.parametrize("value", ["Auto", "", "0.1", "none"])
def test_check_l2_option_refuses_strings_other_than_auto(value) -> None:
    """Any other string: ValueError naming the option and 'auto'."""
    with pytest.raises(ValueError, match=_named() + " be 'auto' or a number >= 0, got"):
        check_l2_option(LABEL, value)


@pytest.mark.parametrize(("value", "message"),
                         [(-TINY, "be finite and >= 0"), (NAN, "be finite and >= 0"),
                          (INF, "be finite and >= 0"), (ABOVE_MAX, r"be at most 1e\+100")],
                         ids=repr)
def test_check_l2_option_refuses_numbers_as_check_nonnegative_option(value, message) -> None:
    """Numbers are checked as check_nonnegative_option checks them (same messages)."""
    with pytest.raises(ValueError, match=_named() + " " + message):
        check_l2_option(LABEL, value)
    with pytest.raises(ValueError, match=_named() + " " + message):
        check_nonnegative_option(LABEL, value)


# ---------------------------------------------------------------------------------------------
# check_start_option


@pytest.mark.parametrize(
    "value",
    [None, [0.0], [1.5, -2.0, 0.0], (1, 2, 3), np.zeros(4), np.arange(3, dtype=np.int64),
     np.array([1e300, -1e300]), [np.float32(1.0), 2]],
    ids=repr,
)
def test_check_start_option_accepts_none_and_finite_vectors(value) -> None:
    """None (zeros) or a non-empty, finite, one-dimensional array of real numbers."""
    assert check_start_option(LABEL, value) is None


@pytest.mark.parametrize("value", [0.0, 3, [[1.0, 2.0]], np.zeros((2, 2)), [], np.zeros(0)],
                         ids=repr)
def test_check_start_option_refuses_scalars_matrices_and_empty_arrays(value) -> None:
    """Not one-dimensional, or empty: ValueError naming the option and the shape."""
    shape = np.asarray(value, dtype=float).shape
    with pytest.raises(ValueError, match=_named() + re.escape(f" be a non-empty one-dimensional "
                                                               f"array, got shape {shape}")):
        check_start_option(LABEL, value)


@pytest.mark.parametrize("value", [[NAN], [0.0, INF], np.array([1.0, -INF])], ids=repr)
def test_check_start_option_refuses_non_finite_entries(value) -> None:
    """NaN or infinite entries: ValueError naming the option."""
    with pytest.raises(ValueError, match=_named() + " be finite"):
        check_start_option(LABEL, value)


@pytest.mark.parametrize(
    "value",
    ["12", "abc", b"12", [1 + 1j, 2.0], ["a", "b"], [{"k": 1}], {"k": 1}, object()],
    ids=lambda v: type(v).__name__,
)
def test_check_start_option_refuses_text_complex_and_objects_with_type_error(value) -> None:
    """Strings, bytes, lists of complex numbers or text, dicts, objects: TypeError."""
    with pytest.raises(TypeError, match=_named() + " be a one-dimensional array of real numbers"):
        check_start_option(LABEL, value)


# np.asarray(complex_array, dtype=float) warns (ComplexWarning, a RuntimeWarning, which the
# suite's filterwarnings turns into an error inside noisygd) before the check refuses the array.
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("value", [np.array([1 + 0j]), np.array([1.0, 2 + 3j])], ids=repr)
def test_check_start_option_refuses_complex_arrays_even_real_valued(value) -> None:
    """A complex array is refused even when every imaginary part is 0: TypeError."""
    with pytest.raises(TypeError, match=_named() + " be a one-dimensional array of real numbers"):
        check_start_option(LABEL, value)


@pytest.mark.parametrize("value", [["1", "2"], np.array(["0.5", "1.5"])], ids=repr)
def test_check_start_option_refuses_numeric_strings_inside_a_sequence(value) -> None:
    """Strings are never numbers (noisygd._checks policy), also as entries of a sequence."""
    with pytest.raises(TypeError, match=_named()):
        check_start_option(LABEL, value)


# ---------------------------------------------------------------------------------------------
# check_shares_option


@pytest.mark.parametrize(
    "value",
    [(0.2, 0.3, 0.5), [1 / 3, 1 / 3, 1 / 3], np.array([0.1, 0.2, 0.7]), [TINY, 0.5, 0.5],
     (0.2, 0.3, 0.5 + 5e-13), [np.float32(0.25), 0.25, 0.5]],
    ids=repr,
)
def test_check_shares_option_accepts_three_positive_numbers_summing_to_one(value) -> None:
    """A list, tuple or array of three numbers > 0 whose sum is 1 within 1e-12."""
    assert math.isclose(math.fsum(float(s) for s in value), 1.0, rel_tol=0, abs_tol=1e-12)
    assert check_shares_option(LABEL, value) is None


@pytest.mark.parametrize("value", ["abc", b"abc", {"a": 0.2, "b": 0.3, "c": 0.5}, 1.0, None,
                                   (s for s in (0.2, 0.3, 0.5))],
                         ids=lambda v: type(v).__name__)
def test_check_shares_option_refuses_non_sequences_with_type_error(value) -> None:
    """Strings, bytes, dicts, scalars, None and generators: TypeError naming the option."""
    with pytest.raises(TypeError, match=_named() + r" be three positive numbers summing to 1 "
                       r"\(in order: a list, tuple or array\), got " + type(value).__name__):
        check_shares_option(LABEL, value)


@pytest.mark.parametrize("value", [[], [1.0], [0.5, 0.5], [0.25] * 4, np.full(5, 0.2)],
                         ids=repr)
def test_check_shares_option_refuses_other_lengths(value) -> None:
    """Not three entries: ValueError naming the option and the length found."""
    with pytest.raises(ValueError, match=_named() + f" hold three numbers, got {len(value)}"):
        check_shares_option(LABEL, value)


@pytest.mark.parametrize(("value", "index"),
                         [([0.0, 0.5, 0.5], 0), ([0.5, -0.5, 1.0], 1), ([0.5, 0.5, NAN], 2),
                          ([INF, 0.5, 0.5], 0), ([0.5, 0.5, -0.0], 2)], ids=repr)
def test_check_shares_option_refuses_a_non_positive_share_naming_its_index(value, index) -> None:
    """A share <= 0, NaN or inf: ValueError naming the option and the entry's index."""
    label = re.escape(f"{LABEL}[{index}]")
    with pytest.raises(ValueError, match=label + " must be positive and finite"):
        check_shares_option(LABEL, value)


@pytest.mark.parametrize(("value", "index"),
                         [([True, 0.5, 0.5], 0), ([0.2, "0.3", 0.5], 1), ([0.2, 0.3, None], 2)],
                         ids=repr)
def test_check_shares_option_refuses_a_non_number_share_naming_its_index(value, index) -> None:
    """A bool, string or None among the shares: TypeError naming the entry."""
    label = re.escape(f"{LABEL}[{index}]")
    with pytest.raises(TypeError, match=label + " must be a real number"):
        check_shares_option(LABEL, value)


@pytest.mark.parametrize("value", [(0.2, 0.3, 0.4), (0.5, 0.5, 0.5), (0.2, 0.3, 0.5 + 2e-12)],
                         ids=repr)
def test_check_shares_option_refuses_sums_away_from_one(value) -> None:
    """A sum off 1 by more than 1e-12: ValueError naming the option and quoting the sum."""
    total = math.fsum(value)
    with pytest.raises(ValueError, match=_named() + " sum to 1, got " + re.escape(repr(total))):
        check_shares_option(LABEL, value)


@pytest.mark.parametrize("value", [[True, False], np.array([True]), [1 + 0j], [0.5, None]],
                         ids=repr)
def test_check_start_option_refuses_bools_complex_and_objects(value) -> None:
    """Only integer or floating arrays are starting points (no bools, complex or objects)."""
    with pytest.raises(TypeError, match=_named()):
        check_start_option(LABEL, value)


def test_check_shares_option_refuses_an_unordered_set() -> None:
    """A set has no order, so which share goes to which release would be undefined."""
    with pytest.raises(TypeError, match="in order"):
        check_shares_option(LABEL, {0.2, 0.3, 0.5})


@pytest.mark.parametrize("counts", [(3, 6), (6,)])
def test_check_shares_option_takes_the_lengths_it_is_given(counts) -> None:
    """``counts``: SSP's three (Wang's form) or six (the centred form) shares."""
    check_shares_option(LABEL, (1 / 6,) * 6, counts=counts)
    with pytest.raises(ValueError, match="must hold"):
        check_shares_option(LABEL, (0.25,) * 4, counts=counts)


def test_check_start_option_refuses_ragged_nesting_with_type_error() -> None:
    """A ragged list is not an array of real numbers: TypeError naming the option (NumPy's
    own ValueError must not escape)."""
    with pytest.raises(TypeError, match=_named()):
        check_start_option(LABEL, [[1.0, 2.0], [3.0]])
