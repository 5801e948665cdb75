from haygraph.control.evidence import Evidence
from haygraph.control.planning.extractive import ExtractiveAnswer
from haygraph.control.planning.reader_answer import (
    combined_answer,
    holding_unit,
    readable_value,
    reader_answer,
    source_note,
    usable_span,
)
from haygraph.control.reading import AnswerSpan, Reading

TABLE = (
    "Monthly parking fees by level:\n\n| Level | Monthly fee |\n|---|---|\n"
    "| B1 | 120 EUR |\n| B2 | 90 EUR |\n| Roof | 60 EUR |\n"
)
PROSE = "Parking is free on weekends. On weekdays the garage opens at 07:00 and closes at 22:00."


def ev(i, text):
    return Evidence(id=i, text=text, score=1.0, relevance=0.9, source=f"{i}.md")


def span(item, text, margin=3.0):
    start = item.text.index(text)
    return AnswerSpan(evidence_id=item.id, start=start, end=start + len(text), text=text, margin=margin)


class TestHoldingUnit:
    def test_a_table_cell_is_quoted_as_its_row_with_the_header(self):
        start = TABLE.index("90 EUR")
        unit = holding_unit(TABLE, start, start + 6)
        assert unit is not None and "B2" in unit and "90 EUR" in unit and "120" not in unit

    def test_a_prose_span_is_quoted_as_its_sentence(self):
        start = PROSE.index("07:00")
        assert (
            holding_unit(PROSE, start, start + 5)
            == "On weekdays the garage opens at 07:00 and closes at 22:00."
        )


class TestReaderAnswer:
    def test_value_first_then_the_unit_then_the_citation(self):
        item = ev("fees", TABLE)
        answer = reader_answer(
            "How much is parking on B2 per month?", Reading(spans=[span(item, "90 EUR")]), [item]
        )
        assert answer is not None
        assert answer.answer.startswith("90 EUR — ")
        assert answer.answer.endswith("[fees]") and answer.evidence_ids == ["fees"]
        assert "120 EUR" not in answer.answer  # no other row

    def test_a_span_that_is_the_whole_unit_is_quoted_once(self):
        item = ev("p", "Probation lasts six months.")
        answer = reader_answer(
            "How long is probation?", Reading(spans=[span(item, "Probation lasts six months")]), [item]
        )
        assert answer is not None and answer.answer == "Probation lasts six months. [p]"

    def test_spans_outside_the_usable_evidence_are_skipped(self):
        kept, dropped = ev("kept", PROSE), ev("dropped", TABLE)
        reading = Reading(spans=[span(dropped, "90 EUR", 5.0), span(kept, "07:00", 1.0)])
        found = usable_span(reading, [kept])
        assert found is not None and found[0].text == "07:00"
        assert (
            reader_answer("When does the garage open?", Reading(spans=[span(dropped, "90 EUR")]), [kept])
            is None
        )

    def test_a_span_whose_offsets_do_not_match_the_text_is_not_used(self):
        item = ev("p", PROSE)
        wrong = AnswerSpan(evidence_id="p", start=0, end=5, text="07:00", margin=2.0)
        assert usable_span(Reading(spans=[wrong]), [item]) is None


class TestSourceNote:
    def test_other_language_sources_are_named_in_the_question_language(self):
        assert "英文" in source_note("车库几点开门？", PROSE)
        assert "Chinese" in source_note("When does it open?", "车库早上七点开门。")

    def test_same_language_no_note(self):
        assert source_note("When does it open?", PROSE) == ""
        assert source_note("几点开门？", "车库早上七点开门。") == ""


class TestReadableValue:
    def test_markers_a_cut_left_open_are_removed_and_lines_joined(self):
        assert (
            readable_value("3 days** of annual leave\nbefore probation")
            == "3 days of annual leave before probation"
        )
        assert readable_value("90 EUR |") == "90 EUR"
        assert readable_value("`0.0.0.0`") == "`0.0.0.0`"
        assert readable_value("run `fastapi") == "run fastapi"
        assert readable_value("[the docs](https://x.example/docs)") == "the docs"


SENTENCE = "On weekdays the garage opens at 07:00 and closes at 22:00."


class TestCombinedAnswer:
    """The reader's span with the sentence picker's answer (`picked`)."""

    def picked(self, item, units):
        return ExtractiveAnswer(" ".join(f"{u} [{item.id}]" for u in units), [item.id], list(units))

    def test_in_the_same_language_the_picked_answer_stands(self):
        item = ev("p", PROSE)
        picked = self.picked(item, [SENTENCE])
        got = combined_answer(
            "When does the garage open?", Reading(spans=[span(item, "07:00")]), [item], picked
        )
        assert got is picked

    def test_a_span_elsewhere_leaves_the_picked_answer(self):
        item = ev("p", PROSE)
        picked = self.picked(item, ["Parking is free on weekends."])
        got = combined_answer(
            "When does the garage open?", Reading(spans=[span(item, "07:00")]), [item], picked
        )
        assert got is picked

    def test_no_span_leaves_the_picked_answer_and_no_picked_answer_takes_the_span(self):
        item = ev("p", PROSE)
        picked = self.picked(item, [SENTENCE])
        assert combined_answer("When?", Reading(spans=[]), [item], picked) is picked
        alone = combined_answer("When does it open?", Reading(spans=[span(item, "07:00")]), [item], None)
        assert alone is not None and alone.answer.startswith("07:00 — ")

    def test_across_languages_the_span_answers_with_a_note(self):
        item = ev("p", PROSE)
        picked = self.picked(item, ["Parking is free on weekends."])
        got = combined_answer("车库工作日几点开门？", Reading(spans=[span(item, "07:00")]), [item], picked)
        assert got is not None and got.answer.startswith("07:00 — " + SENTENCE) and "英文" in got.answer


class TestLeadAndRows:
    """The fitted lead margin, and a picked table narrowed to the row the question names."""

    def test_below_the_lead_margin_the_unit_alone_is_quoted(self):
        item = ev("fees", TABLE)
        reading = Reading(spans=[span(item, "90 EUR", margin=2.0)])
        low = reader_answer("How much is parking on B2?", reading, [item], lead_margin=5.0)
        high = reader_answer("How much is parking on B2?", reading, [item], lead_margin=1.0)
        assert low is not None and high is not None
        assert not low.answer.startswith("90 EUR") and "B2" in low.answer and "90 EUR" in low.answer
        assert high.answer.startswith("90 EUR — ")

    def test_a_whole_table_picked_is_narrowed_to_the_named_row(self):
        item = ev("fees", TABLE)
        table_unit = "Level → Monthly fee: B1 → 120 EUR; B2 → 90 EUR; Roof → 60 EUR"
        picked = ExtractiveAnswer(f"{table_unit} [fees]", ["fees"], [table_unit])
        reading = Reading(spans=[span(item, "90 EUR")])
        got = combined_answer("How much is parking on level B2 per month?", reading, [item], picked)
        assert got is not None and "90 EUR" in got.answer and "120 EUR" not in got.answer
        assert got.answer.endswith("[fees]") and got.evidence_ids == ["fees"]
        # a row the question does not name is left to the picker (the span may be in the wrong row)
        unnamed = combined_answer("What is the cheapest monthly parking?", reading, [item], picked)
        assert unnamed is picked
        # the span in a sibling row: the row the question names is quoted
        sibling = combined_answer(
            "How much is parking on level B2 per month?",
            Reading(spans=[span(item, "120 EUR")]),
            [item],
            picked,
        )
        assert sibling is not None and "90 EUR" in sibling.answer and "120 EUR" not in sibling.answer

    def test_across_languages_a_span_running_into_the_named_row_answers_with_that_row(self):
        item = ev("fees", TABLE)
        across = Reading(spans=[span(item, "120 EUR |\n| B2 | 90 EUR", margin=8.6)])
        got = reader_answer("停车场 B2 层每月多少钱？", across, [item], lead_margin=1.0)
        assert got is not None and got.answer.startswith("90 EUR — Level B2") and "120 EUR" not in got.answer
        assert "英文" in got.answer
        # no row named: the row the span starts in, as before
        plain = reader_answer("停车场每月多少钱？", across, [item], lead_margin=99.0)
        assert plain is not None and "120 EUR" in plain.answer and "90 EUR" not in plain.answer


def test_answers_across_only_when_the_best_span_is_in_the_other_language() -> None:
    from haygraph.control.planning.reader_answer import answers_across

    english = Evidence(id="g::en", text="The garage opens at 07:00 on workdays.", score=0.9, relevance=0.9)
    chinese = Evidence(id="g::zh", text="车库工作日 07:00 开门。", score=0.9, relevance=0.9)
    assert answers_across("车库工作日几点开门？", Reading(spans=[span(english, "07:00")]), [english])
    assert not answers_across("车库工作日几点开门？", Reading(spans=[span(chinese, "07:00")]), [chinese])
    assert not answers_across("车库工作日几点开门？", Reading(spans=[]), [english])
