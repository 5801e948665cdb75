"""`benchmarks.reader_gate`: the shipping rule read from eval_reader's and ablate_decision's outputs."""

from __future__ import annotations

import json

import pytest

from benchmarks.reader_gate import checks, main


def _eval(en: tuple[float, float], zh: tuple[float, float]) -> dict:
    """eval_reader --dev's shape: per language, F1 and HasAns F1 at the threshold (854 en, 373 zh)."""
    return {
        "dev": {
            lang: {"at_threshold": {"total": n, "f1": f1, "HasAns_f1": has}, "best_threshold": 0.0}
            for lang, n, (f1, has) in (("en", 854, en), ("zh", 373, zh))
        }
    }


def _ablation(macro: float) -> dict:
    return {"all signals, all rules": {"threshold": 0.5, "macro_balanced": macro, "groups": {}}}


SHIPPED = _eval((56.0, 52.5), (67.7, 65.3))  # the shipped reader, re-read December 7
FIRST_CANDIDATE = _eval((60.6, 52.0), (67.9, 59.3))  # December 7's step 985: more refusals, fewer answers


def test_the_first_candidate_fails_on_the_answers_it_found_and_the_decision():
    result = {
        c.name.split(" (")[0]: c.passed
        for c in checks(SHIPPED, FIRST_CANDIDATE, _ablation(0.772), _ablation(0.766))
    }
    assert result == {
        "dev F1, en+zh weighted": True,  # +3.3: the rule alone would ship it
        "dev HasAns F1 en": True,  # -0.5
        "dev HasAns F1 zh": False,  # -6.0
        "decision refit, tune macro": False,  # -0.006
    }


def test_a_candidate_that_finds_more_answers_and_decides_as_well_passes():
    better = _eval((58.0, 54.0), (69.0, 65.3))
    assert all(c.passed for c in checks(SHIPPED, better, _ablation(0.772), _ablation(0.768)))
    flat = _eval((56.0, 53.6), (67.8, 65.6))  # +0.3 F1: not enough
    assert next(c.passed for c in checks(SHIPPED, flat, _ablation(0.772), _ablation(0.772))) is False


def test_results_of_different_slices_are_refused():
    other = json.loads(json.dumps(SHIPPED))
    other["dev"]["en"]["at_threshold"]["total"] = 692
    with pytest.raises(ValueError, match="854 examples against 692"):
        checks(SHIPPED, other, _ablation(0.7), _ablation(0.7))
    with pytest.raises(ValueError, match="no dev-slice scores"):
        checks({"xquad": {}}, SHIPPED, _ablation(0.7), _ablation(0.7))


def test_the_command_prints_the_checks_and_exits_1_for_do_not_ship(tmp_path, capsys):
    files = {}
    for name, data in (
        ("s", SHIPPED),
        ("c", FIRST_CANDIDATE),
        ("sd", _ablation(0.772)),
        ("cd", _ablation(0.766)),
    ):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(data), encoding="utf-8")
    argv = ["--shipped", str(files["s"]), "--candidate", str(files["c"])]
    argv += ["--shipped-decision", str(files["sd"]), "--candidate-decision", str(files["cd"])]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "FAIL  dev HasAns F1 zh" in out and out.rstrip().endswith("verdict: do not ship")
    with pytest.raises(SystemExit):
        main(["--shipped", str(tmp_path / "missing.json"), *argv[2:]])
