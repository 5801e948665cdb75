"""`benchmarks.reader_curve`: the learning curve's table, gains and plot from a curve.csv."""

from __future__ import annotations

from benchmarks.reader_curve import by_step, gains, group_colors, markdown, plot, read_curve

CSV = """step,windows,epoch,lang,n,exact,f1,HasAns_f1,NoAns_exact,seconds
0,0,0.000,en,3,40.00,50.00,45.00,60.00,9
0,0,0.000,zh,2,50.00,60.00,60.00,nan,9
300,10000,0.138,en,3,42.00,53.25,44.00,70.00,9
300,10000,0.138,zh,2,55.00,60.25,60.25,nan,9
600,20000,0.276,en,3,43.00,53.50,43.50,72.50,9
"""


def _rows(tmp_path):
    path = tmp_path / "curve.csv"
    path.write_text(CSV, encoding="utf-8")
    return read_curve(path)


def test_points_group_the_languages_of_one_evaluation(tmp_path):
    points = by_step(_rows(tmp_path))
    assert [(s, w) for s, w, _e, _sc in points] == [(0, 0), (300, 10000), (600, 20000)]
    assert points[1][3]["en"] == (42.0, 53.25, 44.0, 70.0)
    assert points[1][3]["zh"][:3] == (55.0, 60.25, 60.25)


def test_gains_are_the_f1_steps_between_evaluations(tmp_path):
    rows = _rows(tmp_path)
    assert gains(rows, "en") == [3.25, 0.25]  # 50 -> 53.25 -> 53.5
    assert gains(rows, "zh") == [0.25]  # zh missing from the last evaluation


def test_the_table_has_a_row_per_evaluation_and_blank_cells_where_a_language_is_missing(tmp_path):
    lines = markdown(_rows(tmp_path)).splitlines()
    assert lines[0] == (
        "| step | windows | epochs | en EM | en F1 | en HasAns F1 | en NoAns "
        "| zh EM | zh F1 | zh HasAns F1 | zh NoAns |"
    )
    assert (
        lines[3] == "| 300 | 10,000 | 0.14 | 42.0 | 53.2 | 44.0 | 70.0 | 55.0 | 60.2 | 60.2 |  |"
    )  # NoAns nan
    assert lines[4].endswith("| 43.0 | 53.5 | 43.5 | 72.5 |  |  |  |  |")  # F1 up, answers found down


def test_a_curve_without_em_reads_with_empty_cells(tmp_path):
    """The curves rebuilt from the model card's published figures (``docs/reader-curves``) have no EM."""
    path = tmp_path / "published.csv"
    path.write_text(
        "step,windows,epoch,lang,n,exact,f1,HasAns_f1,NoAns_exact,seconds\n"
        "0,0,0.000,en,692,49.9,62.7,60.7,68.8,\n362,10009,0.140,en,692,,65.1,61.0,77.7,\n",
        encoding="utf-8",
    )
    rows = read_curve(path)
    assert gains(rows, "en") == [2.4]
    assert markdown(rows).splitlines()[3] == "| 362 | 10,009 | 0.14 |  | 65.1 | 61.0 | 77.7 |"


def test_the_plot_is_a_png_of_one_run_or_several(tmp_path):
    path = plot(_rows(tmp_path), tmp_path / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    both = plot([_rows(tmp_path), _rows(tmp_path)[:2]], tmp_path / "two.png", ["main", "variant"])
    assert both.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_language_has_one_colour_in_every_run(tmp_path):
    cross = tmp_path / "cross.csv"
    cross.write_text(
        CSV.splitlines()[0] + "\n0,0,0.000,en,3,40,50,45,60,9\n0,0,0.000,en->zh,2,20,30,10,90,9\n"
        "0,0,0.000,zh,2,50,60,60,nan,9\n0,0,0.000,zh->en,2,20,25,5,95,9\n",
        encoding="utf-8",
    )
    colors = group_colors([_rows(tmp_path), read_curve(cross)])  # the first run has en and zh alone
    assert sorted(colors) == ["en", "en->zh", "zh", "zh->en"]
    assert len(set(colors.values())) == 4  # zh is not drawn in en->zh's colour in the second run
