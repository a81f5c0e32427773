"""rounding.py: numbers rounded to what their intervals justify (hand-computed cases)."""

import math

import pytest

from biaslens.rounding import decimals_for, estimate, fixed, interval, number, p_text, pvalue


@pytest.mark.parametrize("width, places", [
    (0.1522, 2),   # 2nd significant digit of 0.15 is the hundredths
    (0.0152, 3),
    (1.0, 1),      # 1.0: tenths
    (9.99, 1),
    (60.6, 0),     # 61: units
    (606.0, -1),   # 610: tens
])
def test_decimals_follow_two_significant_figures_of_the_width(width, places):
    assert decimals_for(width) == places


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_decimals_need_a_positive_width(bad):
    with pytest.raises(ValueError):
        decimals_for(bad)


@pytest.mark.parametrize("args, text", [
    ((0.7581, 0.6712, 0.8234), "0.76 (95% CI 0.67 to 0.82)"),            # width 0.152 -> 2 places
    ((130.04501291588, 100.3, 160.9), "130 (95% CI 100 to 161)"),          # width 60.6 -> units
    ((1234.5, 890.0, 1530.0), "1230 (95% CI 890 to 1530)"),                # width 640 -> tens
    ((12.64847630715278, 10.01558245411567, 17.630784583850186), "12.6 (95% CI 10.0 to 17.6)"),  # width 7.6
    ((0.3974491406177009, 0.07328664057668433, 0.7216116406587175), "0.40 (95% CI 0.07 to 0.72)"),
    ((0.0004, -0.0002, 0.0011), "0.0004 (95% CI -0.0002 to 0.0011)"),       # width 0.0013 -> 4 places
])
def test_estimate_is_rounded_to_its_interval(args, text):
    assert estimate(*args) == text


def test_estimate_signed_and_labelled():
    assert estimate(-0.0401, -0.36, 0.28, signed=True) == "-0.04 (95% CI -0.36 to +0.28)"
    assert estimate(0.004, -0.3, 0.3, signed=True, label="simultaneous 95% CI") == (
        "+0.00 (simultaneous 95% CI -0.30 to +0.30)")
    assert interval(0.6, 1.0) == "0.60 to 1.00"


def test_estimate_without_a_usable_interval_keeps_three_significant_figures():
    assert estimate(0.8461538461538461) == "0.846"
    assert estimate(0.8461538461538461, None, 1.0) == "0.846"
    assert estimate(2.0, 2.0, 2.0) == "2.00"  # a zero-width interval sets no precision
    assert estimate(None, 0.1, 0.2) == "–" and estimate(math.nan) == "–"
    assert interval(None, 1.0) == "–"


@pytest.mark.parametrize("x, text", [
    (130.04501291588, "130"),
    (0.16569986182576307, "0.166"),
    (0.000123456, "0.000123"),
    (9.996, "10.0"),            # rounds up a digit: 10.0, not 10.00
    (12345.6, "12,300"),
    (-2.4849, "-2.48"),
    (0.0, "0"),
    (None, "–"),
    (math.inf, "–"),
])
def test_number_has_three_significant_figures(x, text):
    assert number(x) == text


def test_number_signed_and_no_negative_zero():
    assert number(2.4849, signed=True) == "+2.48"
    assert fixed(-0.001, 2) == "0.00"
    assert fixed(1234567.0, 0) == "1,234,567"


@pytest.mark.parametrize("p, text", [
    (0.16569986182576307, "0.17"),
    (0.0499, "0.0499"), (0.0501, "0.050"),
    (0.05, "0.050"),
    (0.018, "0.018"),
    (0.001, "0.0010"),
    (0.00099, "< 0.001"),
    (1e-12, "< 0.001"),
    (0.996, "1.0"),
    (1.0, "1.0"),
    (math.nan, "–"),
])
def test_pvalues_have_two_significant_figures(p, text):
    assert pvalue(p) == text


def test_p_text_reads_in_a_sentence():
    assert p_text(0.353) == "p = 0.35"
    assert p_text(0.0001) == "p < 0.001"


def test_estimate_without_a_label():
    assert estimate(0.4, 0.07, 0.72, signed=True, label="") == "+0.40 (+0.07 to +0.72)"


def test_rounding_never_hides_the_side_of_an_interval():
    """An end that would round onto 0 (or onto an ideal the caller names) gets the places it needs:
    a detected interval never prints 0 (or the ideal) at its edge."""
    from biaslens.rounding import estimate, interval, value_and_interval

    assert estimate(-0.3, -0.71, -0.004, signed=True) == "-0.30 (95% CI -0.71 to -0.004)"
    assert estimate(63, 50.4, 75.3, avoid=(0.0, 50.0)) == "63 (95% CI 50.4 to 75)"
    assert value_and_interval(0.5, -0.0001, 1.2) == ("0.5", "-0.0001 to 1.2")
    assert interval(0.0, 1.0) == "0.0 to 1.0"  # an end that is 0 stays 0
    assert estimate(10, 0.4, 20) == "10 (95% CI 0.4 to 20)"
