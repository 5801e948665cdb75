import copy
from pathlib import Path

import pytest
from haystack import Document

from haygraph.retrieval.sentences import detect_language, sentence_spans, split_sentences
from haygraph.retrieval.splitter import StructuredSplitter


class TestSplitSentences:
    def test_english_boundaries(self):
        text = "The office opens at 9. Staff must sign in! Is parking free? Yes, for now."
        assert split_sentences(text) == [
            "The office opens at 9.",
            "Staff must sign in!",
            "Is parking free?",
            "Yes, for now.",
        ]

    @pytest.mark.parametrize(
        "sentence",
        [
            "Bring documents, e.g. Passports and visas, to Dr. Smith and Mr. Jones.",
            "Use form No. 5 or compare plan A vs. Plan B, i.e. The cheaper one.",
            "We sell apples, pears, etc. And many more fruits here.",
            "The rate rose from 3.5 to 4.25 percent in v2.1 of the plan.",
            "Visit https://example.com/docs/index.html or mail hr.team@example.com today.",
            "The book by J. R. Tolkien is long.",
        ],
    )
    def test_no_split_inside(self, sentence):
        assert split_sentences(sentence) == [sentence]

    def test_list_markers_are_not_sentence_ends(self):
        text = "Steps:\n1. Open the Portal.\n2. Click Leave.\n- Then Submit it"
        assert split_sentences(text) == [
            "Steps:",
            "1. Open the Portal.",
            "2. Click Leave.",
            "- Then Submit it",
        ]

    def test_wrapped_english_line_continues_the_sentence(self):
        assert split_sentences("This sentence is\nwrapped. Next one.") == [
            "This sentence is\nwrapped.",
            "Next one.",
        ]

    def test_chinese_punctuation(self):
        text = "员工每年有十天年假。病假需要证明！可以调休吗？可以；但需批准……好的"
        assert split_sentences(text) == [
            "员工每年有十天年假。",
            "病假需要证明！",
            "可以调休吗？",
            "可以；",
            "但需批准……",
            "好的",
        ]

    def test_chinese_closing_quotes_and_brackets_stay(self):
        text = "他说：“明天放假。”「真的吗？」（注：以通知为准。）结束。"
        assert split_sentences(text) == [
            "他说：“明天放假。”",
            "「真的吗？」",
            "（注：以通知为准。）",
            "结束。",
        ]

    def test_chinese_line_breaks_split(self):
        assert split_sentences("第一行没有标点\n第二行") == ["第一行没有标点", "第二行"]

    def test_mixed_text(self):
        text = "Annual leave is 20 days. 年假为二十天。Sick leave needs a note! 病假需证明"
        assert split_sentences(text) == [
            "Annual leave is 20 days.",
            "年假为二十天。",
            "Sick leave needs a note!",
            "病假需证明",
        ]

    def test_spans_point_into_the_text(self):
        text = "  One here.   Two here.\n\n三。"
        spans = sentence_spans(text)
        assert [text[s:e] for s, e in spans] == ["One here.", "Two here.", "三。"]

    def test_empty_and_whitespace(self):
        assert split_sentences("") == []
        assert split_sentences(" \n\t ") == []


class TestDetectLanguage:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Annual leave is twenty days.", "en"),
            ("员工每年享有二十天年假。", "zh"),
            ("员工可以在 HR 系统中申请年假和病假。", "zh"),
            ("Please contact 王小明 about the Beijing office schedule.", "mixed"),
            ("12345 !!!", "en"),
        ],
    )
    def test_classifies_by_cjk_share(self, text, expected):
        assert detect_language(text) == expected


def _sentences(prefix: str, n: int) -> str:
    return " ".join(f"{prefix} rule number {i} applies to every employee." for i in range(n))


LONG_MD = f"""# Leave policy

{_sentences("Leave", 30)}

## Annual leave

{_sentences("Annual", 25)}

### Carry over

{_sentences("Carry", 12)}

## Sick leave

{_sentences("Sick", 20)}
"""


class TestStructuredSplitter:
    def test_init_validation(self):
        with pytest.raises(ValueError, match="got 0"):
            StructuredSplitter(min_chars=0)
        with pytest.raises(ValueError, match="got 900"):
            StructuredSplitter(min_chars=900, max_chars=800)
        with pytest.raises(ValueError, match="got -1"):
            StructuredSplitter(max_chars=-1)

    def test_size_limits(self):
        splitter = StructuredSplitter(min_chars=200, max_chars=400)
        chunks = splitter.run([Document(content=LONG_MD, meta={"source_id": "leave.md"})])["documents"]
        assert len(chunks) > 8
        assert all(len(c.content) <= 400 for c in chunks)
        assert all(len(c.content) >= 200 for c in chunks[:-1])
        assert [c.meta["chunk_index"] for c in chunks] == list(range(len(chunks)))

    def test_sentences_are_never_cut(self):
        splitter = StructuredSplitter(min_chars=100, max_chars=250)
        text = _sentences("Plain", 40)
        chunks = splitter.run([Document(content=text)])["documents"]
        sentences = set(split_sentences(text))
        for chunk in chunks:
            assert set(split_sentences(chunk.content)) <= sentences
        assert " ".join(c.content for c in chunks) == text

    def test_overlong_sentence_is_hard_cut_at_whitespace(self):
        words = " ".join(f"word{i}" for i in range(200))  # one ~1.3k-char sentence
        chunks = StructuredSplitter(min_chars=100, max_chars=300).run([Document(content=words)])["documents"]
        assert len(chunks) >= 5
        assert all(len(c.content) <= 300 for c in chunks)
        assert " ".join(c.content for c in chunks) == words  # cut only at spaces, nothing lost

    def test_overlong_chinese_sentence_is_hard_cut(self):
        text = "甲" * 950
        chunks = StructuredSplitter(min_chars=100, max_chars=400).run([Document(content=text)])["documents"]
        assert [len(c.content) for c in chunks] == [400, 400, 150]

    def test_heading_paths_nested(self):
        splitter = StructuredSplitter(min_chars=200, max_chars=400)
        chunks = splitter.run([Document(content=LONG_MD)])["documents"]
        paths = [tuple(c.meta["heading_path"]) for c in chunks]
        assert paths[0] == ("Leave policy",)
        assert ("Leave policy", "Annual leave") in paths
        assert ("Leave policy", "Annual leave", "Carry over") in paths
        assert paths[-1] == ("Leave policy", "Sick leave")
        carry = [
            c for c in chunks if c.meta["heading_path"] == ["Leave policy", "Annual leave", "Carry over"]
        ]
        assert len(carry) > 1
        assert all("Carry rule" in c.content and "Annual rule" not in c.content for c in carry)
        trail = "# Leave policy\n\n## Annual leave\n\n### Carry over\n\n"
        assert carry[0].content.startswith(trail + "Carry rule number 0")
        assert all(c.content.startswith(trail + "Carry rule") for c in carry)  # continuations too

    def test_heading_trail_keeps_nearest_headings_within_a_quarter(self):
        long_title = "Chapter " + "x" * 60
        text = f"# {long_title}\n\n## Section\n\n### Leaf\n\n" + _sentences("Leaf", 12)
        chunks = StructuredSplitter(min_chars=50, max_chars=200).run([Document(content=text)])["documents"]
        assert all(len(c.content) <= 200 for c in chunks)
        assert all(c.content.startswith("## Section\n\n### Leaf\n\nLeaf rule") for c in chunks[1:])
        assert all(c.meta["heading_path"] == [long_title, "Section", "Leaf"] for c in chunks)

    def test_short_sections_stay_their_own_chunks_with_heading_path(self):
        text = "# Policy\n\n## A\n\nShort a.\n\n## B\n\nShort b.\n\n# Other\n\nOther text."
        chunks = StructuredSplitter(min_chars=100, max_chars=400).run([Document(content=text)])["documents"]
        assert [c.content for c in chunks] == [
            "# Policy\n\n## A\n\nShort a.",
            "# Policy\n\n## B\n\nShort b.",
            "# Other\n\nOther text.",
        ]
        assert [c.meta["heading_path"] for c in chunks] == [["Policy", "A"], ["Policy", "B"], ["Other"]]

    def test_short_leftover_merges_back_only_within_its_section(self):
        body_a = _sentences("A", 3)  # ~150 chars
        splitter = StructuredSplitter(min_chars=100, max_chars=400)
        siblings = f"# P\n\n## A\n\n{body_a}\n\n## B\n\nShort b."
        chunks = splitter.run([Document(content=siblings)])["documents"]
        assert [c.content for c in chunks] == [f"# P\n\n## A\n\n{body_a}", "# P\n\n## B\n\nShort b."]
        one_section = f"# A\n\n{body_a}\n\nShort tail."
        chunks = splitter.run([Document(content=one_section)])["documents"]
        assert [c.content for c in chunks] == [one_section]

    def test_table_kept_whole(self):
        rows = "\n".join(f"| {i} | {20 + i} days |" for i in range(10))
        table = f"| Years | Days |\n|---|---|\n{rows}"
        text = f"# Leave\n\n{_sentences('Intro', 5)}\n\n{table}\n\n{_sentences('Outro', 5)}"
        chunks = StructuredSplitter(min_chars=100, max_chars=400).run([Document(content=text)])["documents"]
        assert sum(table in c.content for c in chunks) == 1
        assert all(len(c.content) <= 400 for c in chunks)

    def test_large_table_split_by_rows(self):
        rows = [f"| {i} | employee {i} | {20 + i} days |" for i in range(40)]
        text = "| Years | Who | Days |\n|---|---|---|\n" + "\n".join(rows)
        chunks = StructuredSplitter(min_chars=100, max_chars=300).run([Document(content=text)])["documents"]
        assert len(chunks) > 1
        header = "| Years | Who | Days |\n|---|---|---|\n"
        for chunk in chunks:
            assert len(chunk.content) <= 300
            assert chunk.content.startswith(header)  # every part repeats the header row
        body_rows = [line for c in chunks for line in c.content.split("\n")[2:]]
        assert body_rows == rows  # every row exactly once, whole, in order

    def test_large_table_under_heading_repeats_heading_and_header(self):
        rows = [f"| {i} years | {12 + i} working days |" for i in range(30)]
        table = "| Service | Leave |\n|---|---|\n" + "\n".join(rows)
        text = f"# Leave\n\n## Entitlement\n\n{table}"
        chunks = StructuredSplitter(min_chars=100, max_chars=300).run([Document(content=text)])["documents"]
        assert len(chunks) > 1
        for chunk in chunks:
            assert len(chunk.content) <= 300
            assert chunk.content.startswith("# Leave\n\n## Entitlement\n\n| Service | Leave |\n|---|---|\n| ")
        assert sorted(line for c in chunks for line in c.content.split("\n")[6:]) == sorted(rows)

    def test_wide_table_split_into_column_groups_each_keeping_the_key(self):
        columns = [f"Quarter {q} revenue in euros" for q in range(1, 9)]
        header = "| Region | " + " | ".join(columns) + " |"
        rows = [
            f"| {region} | " + " | ".join(f"{region[0]}{q}00,000" for q in range(1, 9)) + " |"
            for region in ("North", "South", "East")
        ]
        text = "\n".join([header, "|" + "---|" * 9, *rows])
        chunks = StructuredSplitter(min_chars=50, max_chars=200).run([Document(content=text)])["documents"]
        assert len(chunks) > 1 and all(len(c.content) <= 200 for c in chunks)
        cells: dict[tuple[str, str], str] = {}
        for chunk in chunks:
            lines = chunk.content.split("\n")
            assert lines[0].startswith("| Region | ") and set(lines[1]) <= {"|", "-"}
            head = [h.strip() for h in lines[0].strip("|").split("|")]
            for line in lines[2:]:
                row = [c.strip() for c in line.strip("|").split("|")]
                cells.update({(row[0], h): v for h, v in zip(head[1:], row[1:], strict=True)})
        assert len(cells) == 3 * 8 and cells[("South", "Quarter 7 revenue in euros")] == "S700,000"

    def test_fenced_code_with_blank_lines_kept_together(self):
        code = "```python\ndef f():\n\n    # not a heading\n    return 1\n```"
        text = f"# Code\n\nIntro.\n\n{code}\n\nAfter."
        chunks = StructuredSplitter(min_chars=10, max_chars=400).run([Document(content=text)])["documents"]
        assert any(code in c.content for c in chunks)
        assert all(c.meta["heading_path"] == ["Code"] for c in chunks)

    def test_chinese_document(self):
        body = "".join(f"员工每年享有{i}天带薪年假，需要提前两周申请。" for i in range(60))
        text = f"# 请假制度\n\n## 年假\n\n{body}"
        chunks = StructuredSplitter(min_chars=150, max_chars=300).run([Document(content=text)])["documents"]
        assert len(chunks) > 3
        assert all(c.meta["language"] == "zh" for c in chunks)
        assert all(c.meta["heading_path"] == ["请假制度", "年假"] for c in chunks)
        assert all(len(c.content) <= 300 for c in chunks)
        assert all(c.content.endswith("。") for c in chunks)  # cut only at sentence ends

    def test_plain_text_paragraphs(self):
        text = "First paragraph here.\n\nSecond paragraph here."
        chunks = StructuredSplitter(min_chars=10, max_chars=30).run([Document(content=text)])["documents"]
        assert [c.content for c in chunks] == ["First paragraph here.", "Second paragraph here."]
        assert all(c.meta["heading_path"] == [] for c in chunks)

    def test_meta_and_source_id(self):
        docs = [
            Document(content="Hello there.", meta={"source_id": "a.md", "tenant": "acme"}),
            Document(content="No source id here."),
        ]
        chunks = StructuredSplitter().run(docs)["documents"]
        assert chunks[0].meta == {
            "source_id": "a.md",
            "tenant": "acme",
            "chunk_index": 0,
            "heading_path": [],
            "language": "en",
        }
        assert chunks[1].meta["source_id"] == docs[1].id

    def test_empty_documents_produce_nothing(self, caplog):
        docs = [Document(content=""), Document(content="  \n "), Document(content=None)]
        assert StructuredSplitter().run(docs) == {"documents": []}
        assert StructuredSplitter().run([]) == {"documents": []}
        assert "no text content" in caplog.text

    def test_input_not_mutated(self):
        doc = Document(content=LONG_MD, meta={"source_id": "x", "tags": ["hr"]})
        before = copy.deepcopy(doc)
        chunks = StructuredSplitter(min_chars=200, max_chars=400).run([doc])["documents"]
        chunks[0].meta["tags"].append("changed")
        assert doc == before

    def test_to_dict(self):
        assert StructuredSplitter(min_chars=100, max_chars=500).to_dict() == {
            "type": "haygraph.retrieval.splitter.StructuredSplitter",
            "init_parameters": {"min_chars": 100, "max_chars": 500},
        }

    def test_from_dict_round_trip(self):
        splitter = StructuredSplitter.from_dict(StructuredSplitter(min_chars=120, max_chars=600).to_dict())
        assert (splitter.min_chars, splitter.max_chars) == (120, 600)


class TestStructuredSplitterOnAGuide:
    """A guide of short sections (tests/retrieval/data): each stays its own chunk, headings in text."""

    def test_short_sections_keep_their_headings(self):
        text = (Path(__file__).parent / "data" / "fleet-vehicle-care.md").read_text(encoding="utf-8")
        chunks = StructuredSplitter(min_chars=300, max_chars=800).run([Document(content=text)])["documents"]
        pads = [c for c in chunks if "Replace the brake pads" in c.content]
        assert len(pads) == 1
        assert pads[0].meta["heading_path"] == ["Fleet Vehicle Care", "3. Brakes", "3.1 Brake pads"]
        assert pads[0].content.startswith("# Fleet Vehicle Care\n\n## 3. Brakes\n\n### 3.1 Brake pads\n\n")
        assert "Brake fluid" not in pads[0].content  # the sibling section is not merged in
        for chunk in chunks:
            for heading in chunk.meta["heading_path"]:
                assert heading in chunk.content
