"""jieba over the compact dictionary: the same words, tags and frequencies as jieba itself on real
texts, and a cache file that is written whole, read back, rebuilt when damaged and optional."""

import dataclasses
import json
import logging
import subprocess
import sys
from pathlib import Path

import jieba
import jieba.posseg
import pytest

from haygraph import chinese_words
from haygraph.chinese_words import CompactWords, load_compact_words
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval import sample_handbook_path

TOY = "北京大学 2053 nt\n北京 34488 ns\n大学 20025 n\n学生 16000 n\n北京 100 ns\n".encode()


def real_texts() -> list[str]:
    paragraphs = [
        p.strip()
        for path in sorted(Path(sample_handbook_path()).rglob("*.md"))
        for p in path.read_text(encoding="utf-8").split("\n\n")
        if p.strip()
    ]
    cmrc = datasets_root() / "cmrc2018"
    queries = []
    if (cmrc / "queries.jsonl").is_file():
        with (cmrc / "queries.jsonl").open(encoding="utf-8") as fh:
            queries = [json.loads(line)["text"] for _, line in zip(range(300), fh, strict=False)]
    return paragraphs + queries


class TestSameAsJieba:
    def test_words_tags_and_frequencies_on_the_handbook_and_cmrc_questions(self):
        texts = real_texts()
        assert len(texts) > 400
        jieba.setLogLevel(logging.WARNING)
        for text in texts:
            assert chinese_words.cut(text) == jieba.lcut(text), text
            assert chinese_words.tagged(text) == [(p.word, p.flag) for p in jieba.posseg.lcut(text)], text
            for word in chinese_words.cut(text):
                assert chinese_words.frequency(word) == jieba.dt.FREQ.get(word), word

    def test_a_prefix_of_a_word_has_frequency_zero_and_a_non_word_none(self):
        assert chinese_words.frequency("北京大") == 0 == jieba.dt.FREQ.get("北京大")
        assert chinese_words.frequency("京大学生") is None
        assert chinese_words.frequency("北京") == jieba.dt.FREQ["北京"] > 0

    def test_jieba_posseg_elsewhere_in_the_process_keeps_its_own_tags(self):
        # chinese_words imports jieba.posseg with an empty tag table, then gives it jieba's back lazily
        code = (
            "from haygraph import chinese_words; chinese_words.warm_up(); import jieba.posseg; "
            "print([(p.word, p.flag) for p in jieba.posseg.lcut('北京大学的李明去了上海')])"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert "('北京大学', 'nt')" in done.stdout and "('上海', 'ns')" in done.stdout

    def test_the_dictionary_is_read_only(self):
        tokenizer = chinese_words._taggers()[0]
        with pytest.raises(NotImplementedError, match="read-only"):
            tokenizer.add_word("年假")


class TestCompactWords:
    def test_frequencies_tags_and_total_as_jieba_reads_the_dictionary(self):
        words = CompactWords.build(TOY)
        freq, total = jieba.Tokenizer.gen_pfdict(__import__("io").BytesIO(TOY))
        assert words.total == total == 2053 + 34488 + 20025 + 16000 + 100
        assert {w: words.get(w) for w in freq} == freq  # a repeated word: its last line wins
        assert words.get("北京") == 100 and words.tag("北京") == "ns" and words.tag("北京大") == "x"
        assert words.get("学生会") is None and "北京大" in words and "生" not in words
        assert words.longest == 4

    def test_the_file_form_reads_back_equal_and_a_damaged_one_is_refused(self):
        words = CompactWords.build(TOY)
        data = words.to_bytes()
        back = CompactWords.from_bytes(data)
        assert [back.get(w) for w in words] == [words.get(w) for w in words]
        assert (back.total, back.tag_names, back.longest) == (words.total, words.tag_names, words.longest)
        for cut in (len(data) - 200, len(data) - len(words.trie.tobytes()) - 3, 12):
            with pytest.raises(ValueError, match="truncated"):
                CompactWords.from_bytes(data[:cut])
        with pytest.raises(ValueError, match="first bytes"):
            CompactWords.from_bytes(b"not a dictionary")
        bad_tags = dataclasses.replace(words, tags=bytes([len(words.tag_names)]) * len(words.tags))
        with pytest.raises(ValueError, match="tag index"):
            CompactWords.from_bytes(bad_tags.to_bytes())


class TestCache:
    def test_built_once_then_read_from_the_file(self, tmp_path, monkeypatch):
        path = tmp_path / "jieba" / "toy.words"
        built = load_compact_words(TOY, path)
        assert path.is_file() and not list(path.parent.glob(".words-*"))

        def no_build(_dictionary: bytes) -> CompactWords:
            raise AssertionError("built again")

        monkeypatch.setattr(CompactWords, "build", staticmethod(no_build))
        assert load_compact_words(TOY, path).get("北京大学") == built.get("北京大学") == 2053

    def test_a_damaged_file_is_rebuilt_and_replaced(self, tmp_path, caplog):
        path = tmp_path / "toy.words"
        load_compact_words(TOY, path)
        path.write_bytes(path.read_bytes()[:40])
        with caplog.at_level(logging.WARNING):
            assert load_compact_words(TOY, path).get("学生") == 16000
        assert "is unreadable" in caplog.text
        assert CompactWords.from_bytes(path.read_bytes()).get("学生") == 16000

    def test_an_unwritable_cache_still_gives_the_dictionary_and_says_so(self, tmp_path, caplog):
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        with caplog.at_level(logging.WARNING):
            words = load_compact_words(TOY, blocker / "jieba" / "toy.words")
        assert words.get("大学") == 20025
        assert "could not be cached" in caplog.text and "HAYGRAPH_CACHE_DIR" in caplog.text
