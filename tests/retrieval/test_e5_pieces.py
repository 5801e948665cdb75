"""The engine's unigram tokenizer in Python: its rules on a toy vocabulary, then the real one against
the `tokenizers` build on real texts (ids and offsets equal)."""

import pytest

from haygraph.retrieval.e5_pieces import METASPACE, UnigramPieces

M = METASPACE
TOY = UnigramPieces(
    [f"{M}a", "<unk>", f"{M}", "b", "c", "bc", f"{M}ab", "a", "<s>"],
    [-1.0, 0.0, -2.0, -2.0, -2.0, -3.0, -1.5, -3.0, 0.0],
    unk=1,
)


def ids(text: str) -> list[int]:
    return TOY.encode(text).ids


class TestRules:
    def test_a_metaspace_is_written_in_front_and_for_every_space(self):
        assert ids("ab") == [6]  # ▁ab (-1.5) beats ▁a + b (-3.0)
        assert ids("a bc") == [0, 2, 5]  # ▁a ▁ bc: bc (-3) beats b + c (-4)

    def test_runs_of_spaces_are_one_and_a_leading_space_is_the_metaspace(self):
        assert ids("a   bc") == ids("a bc")
        assert ids(" a") == [0]  # no second ▁ in front of a text that starts with a space

    def test_a_character_no_piece_holds_is_one_unknown_token_each(self):
        assert ids("a xy") == [0, 2, 1, 1]

    def test_the_unknown_piece_itself_is_never_matched(self):
        assert ids("<unk>") == [2, 1, 1, 1, 1, 1]  # ▁ then one unknown per character

    def test_the_lowest_score_minus_ten_is_the_unknown_score(self):
        assert TOY.unk_score == pytest.approx(-13.0)

    def test_offsets_are_ranges_of_the_given_text(self):
        enc = TOY.encode("a  bc")
        assert enc.ids == [0, 2, 5]
        # ▁a covers "a"; the kept ▁ stands for the last space of its run; bc its two characters
        assert enc.offsets == [(0, 1), (2, 3), (3, 5)]
        # no "▁b" piece: the ▁ written in front is a token of its own, with the first character's range
        assert TOY.encode("b").ids == [2, 3] and TOY.encode("b").offsets == [(0, 1), (0, 1)]

    def test_as_the_engine_an_empty_text_is_the_metaspace_and_a_leading_one_gets_another(self):
        assert (TOY.encode("").ids, TOY.encode("").offsets) == ([2], [(0, 0)])
        assert ids(f"{M}a") == [2, 0]

    def test_pieces_and_scores_must_pair(self):
        with pytest.raises(ValueError, match="2 pieces but 1 scores"):
            UnigramPieces(["a", "b"], [0.0], unk=0)


@pytest.mark.integration
def test_same_ids_and_offsets_as_the_tokenizers_build_on_real_texts():
    from benchmarks.bench_e5_pieces import build, texts
    from haygraph.retrieval.e5_encoder import clean_text
    from haygraph.retrieval.e5_torch import PackedE5, packed_model_path
    from haygraph.retrieval.reader.tokens import normalised

    table = PackedE5.read(packed_model_path()).normalisation
    fast, ours = build("tokenizers"), build("pieces")
    checked = 0
    for source, items in texts(40).items():
        for text in items:
            for prefix in ("passage: ", "query: "):
                written, _origin = normalised(prefix + clean_text(text), table)
                a, b = fast.encode(written, add_special_tokens=False), ours.encode(written)
                assert (list(a.ids), [tuple(o) for o in a.offsets]) == (b.ids, b.offsets), (source, text)
                checked += 1
    assert checked > 900
