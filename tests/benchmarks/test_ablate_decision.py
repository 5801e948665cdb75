"""`benchmarks.ablate_decision --set-threshold`: the shipped threshold is the one with every rule applied."""

import argparse
import json

from benchmarks.ablate_decision import set_threshold


def test_the_rules_threshold_replaces_the_model_only_one_which_is_kept(tmp_path):
    weights = tmp_path / "answerability_reader.json"
    weights.write_text(json.dumps({"weights": {"en_gap": 0.5}, "threshold": 0.6}), encoding="utf-8")
    full = {
        "threshold": 0.46,
        "macro_balanced": 0.772,
        "groups": {"cmrc/zh": {"answered": 0.9, "refused": 0.8}},
    }
    args = argparse.Namespace(reader="bundled", meaning=True, modes="hybrid", min_refusal=0.7)
    set_threshold(weights, full, args)
    data = json.loads(weights.read_text(encoding="utf-8"))
    assert data["threshold"] == 0.46 and data["threshold_model_only"] == 0.6
    assert data["held_out_with_rules"] == full["groups"] and data["weights"] == {"en_gap": 0.5}
    assert (
        "--set-threshold answerability_reader.json" in data["threshold_by"]
        and "0.772" in data["threshold_by"]
    )
    set_threshold(weights, {**full, "threshold": 0.5}, args)  # run again: the model's own pick stays
    data = json.loads(weights.read_text(encoding="utf-8"))
    assert data["threshold"] == 0.5 and data["threshold_model_only"] == 0.6
