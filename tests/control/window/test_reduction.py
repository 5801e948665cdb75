import pytest
from pydantic import BaseModel

from haygraph.control.errors import ReductionError
from haygraph.control.tools.types import ToolResult
from haygraph.control.window.reduction import prepare_tool_results, reduce_to_key_fields, render_tool_result
from haygraph.control.window.tokens import TokenCounter


class WordCounter(TokenCounter):
    name = "words"

    def count(self, text: str) -> int:
        return len(text.replace(",", " ").replace(":", " ").split())


def logistics(n_events: int = 50) -> dict:
    return {
        "order_id": "123456789012",
        "status": "in_transit",
        "eta": "2024-05-20",
        "carrier": {"name": "SF Express", "phone": "95338"},
        "events": [
            {
                "time": f"2024-05-{12 + i // 10:02d}T{i % 24:02d}:00",
                "place": f"Hub {i}",
                "note": "scanned at hub",
            }
            for i in range(n_events)
        ],
    }


KEY_FIELDS = ["order_id", "status", "events[-1]", "eta", "count(events)", "carrier.name"]


class TestReduceToKeyFields:
    def test_logistics_key_fields(self):
        reduced = reduce_to_key_fields(logistics(), KEY_FIELDS)
        assert reduced == {
            "order_id": "123456789012",
            "status": "in_transit",
            "events[-1]": {"time": "2024-05-16T01:00", "place": "Hub 49", "note": "scanned at hub"},
            "eta": "2024-05-20",
            "count(events)": 50,
            "carrier.name": "SF Express",
        }

    def test_missing_fields_left_out(self):
        assert reduce_to_key_fields({"a": 1, "l": []}, ["a", "b", "l[0]", "x.y"]) == {"a": 1}

    def test_list_and_pydantic_content(self):
        class Result(BaseModel):
            order_id: str
            items: list[int]

        assert reduce_to_key_fields([1, 2, 3], ["count(items)", "items[0]"]) == {
            "count(items)": 3,
            "items[0]": 1,
        }
        assert reduce_to_key_fields(Result(order_id="1", items=[4]), ["order_id", "items[-1]"]) == {
            "order_id": "1",
            "items[-1]": 4,
        }

    def test_bad_spec_and_scalar_content_are_typed_errors(self):
        with pytest.raises(ReductionError, match="bad key field spec"):
            reduce_to_key_fields({"a": 1}, ["a[x]"])
        with pytest.raises(ReductionError, match="cannot take key fields"):
            reduce_to_key_fields(42, ["a"])


class TestPrepareToolResults:
    def result(self, content, name="track_order", status="ok", error=None):
        return ToolResult(call_id="c1", name=name, status=status, content=content, error=error)

    def test_fifty_events_reduced_to_key_fields_within_share(self):
        counter = WordCounter()
        full = self.result(logistics(50))
        full_tokens = counter.count(render_tool_result(full, full.content))
        share = 100
        assert full_tokens > share
        [prepared] = prepare_tool_results(
            [full], counter=counter, allowance=share, key_fields={"track_order": KEY_FIELDS}
        )
        assert prepared.reduced
        assert prepared.tokens <= share
        assert prepared.tokens == counter.count(prepared.text)
        assert '"count(events)":50' in prepared.text and "Hub 49" in prepared.text
        assert "Hub 48" not in prepared.text

    def test_full_content_kept_only_under_cap(self):
        counter = WordCounter()
        big = self.result(logistics(50))
        [kept] = prepare_tool_results([big], counter=counter, allowance=10, full_content_cap_tokens=100_000)
        [dropped] = prepare_tool_results([big], counter=counter, allowance=10, full_content_cap_tokens=50)
        assert kept.full_content == logistics(50)
        assert dropped.full_content is None

    def test_results_under_share_are_untouched(self):
        counter = WordCounter()
        small = self.result(logistics(1))
        [prepared] = prepare_tool_results(
            [small], counter=counter, allowance=10_000, key_fields={"track_order": KEY_FIELDS}
        )
        assert not prepared.reduced
        assert '"events":[' in prepared.text

    def test_text_result_without_key_fields_cut_at_sentence(self):
        text = "First sentence here. " * 50
        [prepared] = prepare_tool_results(
            [self.result(text, name="search")], counter=WordCounter(), allowance=20
        )
        assert prepared.reduced and prepared.tokens <= 20
        assert prepared.text.endswith("here.")

    def test_error_result_rendered_with_message(self):
        err = self.result(None, status="timeout", error="tool timed out after 3.0 s")
        [prepared] = prepare_tool_results([err], counter=WordCounter(), allowance=100)
        assert prepared.text == "[tool track_order call c1 status timeout]\nerror: tool timed out after 3.0 s"
