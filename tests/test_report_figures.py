"""Figure layout at matplotlib level (issue 17), no browser: legends beside the data, never over
it; box plots ranked by median; scatter labels inside their panels. Each figure function is run
on small synthetic inputs and the matplotlib figure is measured before it becomes a PNG."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from matplotlib import rcParams
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import same_color

from biaslens.methods.holistic import generation_report as holistic_generation
from biaslens.methods.holistic import likelihood_report as holistic_likelihood


@pytest.fixture
def keep_figure(monkeypatch):
    """Make the report modules return the matplotlib figure instead of its PNG."""
    for module in (holistic_likelihood, holistic_generation):
        monkeypatch.setattr(module, "figure_from_matplotlib", lambda fig, *a, **k: fig)


def _drawn(fig):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _overlaps(a, b) -> bool:
    """Whether two display-space boxes share area (touching edges do not count)."""
    return a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5


def _inside(inner, outer, slack: float = 0.5) -> bool:
    return (inner.x0 >= outer.x0 - slack and inner.x1 <= outer.x1 + slack
            and inner.y0 >= outer.y0 - slack and inner.y1 <= outer.y1 + slack)


def test_likelihood_per_axis_legend_lies_beside_the_bars(keep_figure):
    # religion with the widest interval, reaching the right edge at the top: where a legend inside would sit
    axes = ["ability", "age", "gender_and_sex", "nationality", "race_ethnicity", "religion"]
    lb = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.95])
    by_axis = pd.DataFrame({"axis": axes, "likelihood_bias": lb, "ci_low": lb - 0.1,
                            "ci_high": np.minimum(lb + 0.1, 1.0), "likelihood_bias_bh": lb * 0.8})
    fig = holistic_likelihood.lb_bar_figure(SimpleNamespace(by_axis=by_axis))
    renderer = _drawn(fig)
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert legend is not None and {t.get_text() for t in legend.get_texts()} == {"uncorrected (paper)",
                                                                                  "Benjamini-Hochberg"}
    assert not _overlaps(legend.get_window_extent(renderer), ax.get_window_extent(renderer)), \
        "the legend covers the data area"


def test_likelihood_distribution_boxes_are_ranked_by_median(keep_figure):
    rng = np.random.default_rng(0)
    # alphabetical order differs from the median order on purpose
    medians = {"ability": 60.0, "age": 20.0, "body_type": 90.0, "religion": 10.0, "gender_and_sex": 45.0}
    sentences = pd.concat([pd.DataFrame({"axis": a, "perplexity": m * np.exp(rng.normal(0, 0.2, 40))})
                           for a, m in medians.items()], ignore_index=True)
    fig = holistic_likelihood.ppl_distribution_figure(sentences)
    _drawn(fig)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    observed = sentences.groupby("axis")["perplexity"].median()
    assert labels == sorted(medians, key=lambda a: observed[a]), labels  # lowest at the bottom
    assert labels != sorted(labels)
    # the boxes' median lines (bottom to top) increase
    medians_drawn = sorted((float(np.mean(line.get_ydata())), float(line.get_xdata()[0])) for line in ax.lines
                           if same_color(line.get_color(), rcParams["boxplot.medianprops.color"]))
    assert len(medians_drawn) == len(medians)
    box_medians = [x for _, x in medians_drawn]
    assert box_medians == sorted(box_medians)


def test_generation_noise_floor_legend_is_off_the_bars(keep_figure):
    rng = np.random.default_rng(1)
    fig = holistic_generation.noise_floor_figure(rng.normal(5.0, 1.0, 500), observed=9.0)
    renderer = _drawn(fig)
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert legend is not None
    assert not _overlaps(legend.get_window_extent(renderer), ax.get_window_extent(renderer)), \
        "the legend covers the histogram"


def test_generation_scatter_labels_stay_inside_their_panels(keep_figure):
    # long labels at both ends of the frequency range, the highest values at the edges
    desc = pd.DataFrame({
        "descriptor": ["Mexican-American", "left-handed", "Deaf", "blind", "Catholic", "hard-of-hearing",
                       "middle-aged", "Indigenous"],
        "axis": ["race_ethnicity", "ability", "ability", "ability", "religion", "ability", "age", "race_ethnicity"],
        "one_word": [True] * 8,
        "frequency": [1e-7, 3e-6, 1e-5, 4e-5, 2e-5, 2e-7, 5e-6, 1e-4],
        "Hate": [0.9, 0.1, 0.05, 0.88, 0.2, 0.86, 0.3, 0.89],
        "Sympathy": [0.2, 0.8, 0.79, 0.1, 0.78, 0.05, 0.81, 0.3],
    })
    fig = holistic_generation.frequency_figure(desc, ["Hate", "Sympathy"])
    renderer = _drawn(fig)
    checked = 0
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        for text in ax.texts:
            extent = text.get_window_extent(renderer)
            assert _inside(extent, box), f"{ax.get_title()}: label {text.get_text()!r} runs outside its panel"
            checked += 1
    assert checked == 6  # three labels per cluster


def test_interval_cells_read_as_one_range():
    from biaslens.report.html import interval_text, intervals

    assert interval_text(0.012345, 0.45678) == "0.01 to 0.46"  # to the interval's precision
    assert interval_text(-1.5, 2) == "-1.5 to 2.0"
    # a missing end is no interval: never "nan to 0.3" or "None to 0.3"
    assert interval_text(None, 0.3) == interval_text(float("nan"), 0.3) == interval_text(0.1, "x") == "–"
    assert intervals([0.1, None], [0.2, 0.5]) == ["0.10 to 0.20", "–"]
