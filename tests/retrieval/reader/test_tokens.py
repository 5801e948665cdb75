import pytest

from haygraph.retrieval.reader.tokens import MAX_QUESTION_TOKENS, ReaderTokens, normalised


def char_encode(text):
    """A stand-in unigram: one token per non-space character, id = code point; offsets in `text`."""
    ids, offsets = [], []
    for i, ch in enumerate(text):
        if not ch.isspace():
            ids.append(ord(ch))
            offsets.append((i, i + 1))
    return ids, offsets


TOKENS = ReaderTokens(char_encode, {ord("Ａ"): "A", ord("\u00ad"): ""}, bos=0, eos=2)


class TestNormalised:
    def test_maps_characters_and_keeps_origins(self):
        text, origin = normalised("xＡ\u00ady", TOKENS.table)
        # Ａ -> A (one char), soft hyphen -> nothing: "xAy" with origins 0, 1, 3
        assert text == "xAy" and origin == [0, 1, 3]

    def test_nul_and_lone_surrogate(self):
        text, _ = normalised("a\x00b\ud800", {})
        assert text == "a b\ufffd"


class TestWindows:
    def test_layout_and_offsets_point_into_the_original_passage(self):
        passage = "Ｂ is 42."
        [w] = TOKENS.windows("q?", [passage], max_length=64, stride=8)
        # <s> query: q? </s> </s> passage: ... </s>
        assert w.ids[0] == 0 and w.ids[-1] == 2
        head = [ord(c) for c in "query:q?"]
        assert list(w.ids[1 : 1 + len(head)]) == head
        assert w.ids[1 + len(head) : 3 + len(head)] == (2, 2)
        assert [passage[a:b] for a, b in w.offsets] == ["Ｂ", "i", "s", "4", "2", "."]
        assert w.ids[w.context_start] == ord("Ｂ")

    def test_long_passage_windows_overlap_by_stride(self):
        passage = "abcdefghijklmnopqrstuvwxyz" * 2  # 52 tokens
        windows = TOKENS.windows("q", [passage], max_length=40, stride=6)
        room = 40 - (1 + len("query:q") + 2 + len("passage:")) - 1  # 21 passage tokens a window
        starts = [w.offsets[0][0] for w in windows]
        assert all(len(w.ids) <= 40 for w in windows)
        assert starts[:2] == [0, room - 6]
        assert windows[-1].offsets[-1][1] == len(passage)  # the end is read

    def test_passages_are_numbered(self):
        windows = TOKENS.windows("q", ["one", "two"], max_length=40, stride=4)
        assert [w.passage for w in windows] == [0, 1]

    def test_question_is_cut(self):
        q = TOKENS.question_ids("x" * 500)
        assert len(q) == MAX_QUESTION_TOKENS

    def test_too_small_a_window_is_refused(self):
        with pytest.raises(ValueError, match="no room"):
            TOKENS.windows("q" * 40, ["p"], max_length=30, stride=4)


@pytest.mark.integration
def test_real_vocabulary_offsets_slice_the_passage():
    from haygraph.retrieval.e5_vocabulary import E5Vocabulary

    vocab = E5Vocabulary.load()
    passage = "FastAPI 在  0.0.0.0 上监听。The app listens on port 8000."
    [w] = vocab.tokens.windows("Which port?", [passage], max_length=128, stride=32)
    pieces = [passage[a:b] for a, b in w.offsets]
    assert "8000" in pieces and "监" in pieces
    assert all(passage[a:b] == p and not p[:1].isspace() for (a, b), p in zip(w.offsets, pieces, strict=True))
