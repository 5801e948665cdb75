import json

import pytest

from haygraph.control.errors import BudgetConfigError, WindowTooSmallError
from haygraph.control.window.budget import BudgetConfig, allocate_budget, pack_prefix

FIXED = {"system": 40, "question": 10, "entities": 10}  # 60 tokens of fixed costs


class TestBudgetConfig:
    def test_defaults_follow_the_spec(self):
        config = BudgetConfig()
        # 8192 * (.10, .15, .20, .40, .10, .05) floored
        assert [config.nominal(s) for s in ("system", "tool_schemas", "history", "chunks")] == [
            819,
            1228,
            1638,
            3276,
        ]
        assert config.nominal("tool_results") == 819
        assert config.nominal("output_reserve") == 409
        assert config.limit == 8192 - 409

    def test_shares_over_100_percent_rejected(self):
        with pytest.raises(BudgetConfigError, match=r"sum to at most 1\.0"):
            BudgetConfig(chunks=0.5)  # 1.10 in all

    @pytest.mark.parametrize("kwargs", [{"history": -0.1}, {"chunks": float("nan")}, {"system": 1.5}])
    def test_bad_share_rejected(self, kwargs):
        with pytest.raises(BudgetConfigError, match="between 0 and 1"):
            BudgetConfig(**kwargs)

    def test_bad_window_and_priority_rejected(self):
        with pytest.raises(BudgetConfigError, match="context_window must be > 0"):
            BudgetConfig(context_window=0)
        with pytest.raises(BudgetConfigError, match="priority"):
            BudgetConfig(priority=("chunks", "history"))  # type: ignore[arg-type]

    def test_errors_are_value_errors_too(self):
        with pytest.raises(ValueError):
            BudgetConfig(output_reserve=2)


class TestPackPrefix:
    def test_stops_at_first_item_that_does_not_fit(self):
        assert pack_prefix([3, 4, 1], 7) == (2, 7)
        assert pack_prefix([3, 5, 1], 7) == (1, 3)  # the 1 after the 5 is not packed
        assert pack_prefix([], 7) == (0, 0)


class TestAllocateBudget:
    def test_hand_worked_defaults(self):
        # window 1000: reserve 50, limit 950, fixed 60 -> available 890.
        # nominal: system 100, schemas 150, history 200, chunks 400, tool results 100.
        # schemas use 50 (leftover 100), no tool results (leftover 100), history keeps 80+80 of
        # 200 (leftover 40), system share leftover 100-60=40 -> chunks 400+100+100+40+40 = 680.
        # Chunks 300+200+100 = 600 fit; +90 = 690 does not.
        allocation = allocate_budget(
            BudgetConfig(context_window=1000),
            fixed=FIXED,
            item_costs={"tool_schemas": [50], "history": [80, 80, 80], "chunks": [300, 200, 100, 90]},
        )
        parts = allocation.parts
        assert (allocation.output_reserve, allocation.limit, allocation.fixed_total) == (50, 950, 60)
        assert (parts["tool_schemas"].allowed, parts["tool_schemas"].used, parts["tool_schemas"].kept) == (
            150,
            50,
            1,
        )
        assert (parts["history"].used, parts["history"].kept, parts["history"].dropped) == (160, 2, 1)
        assert parts["tool_results"].used == 0
        assert (parts["chunks"].allowed, parts["chunks"].used) == (680, 600)
        assert (parts["chunks"].kept, parts["chunks"].dropped) == (3, 1)
        assert allocation.total == 60 + 50 + 160 + 600
        assert allocation.total <= allocation.limit

    def test_unused_shares_flow_to_chunks(self):
        # Nothing else to place: chunks get 400 + 150 + 200 + 100 + (100 - 60) = 890.
        allocation = allocate_budget(
            BudgetConfig(context_window=1000), fixed=FIXED, item_costs={"chunks": [700]}
        )
        assert allocation.parts["chunks"].allowed == 890
        assert allocation.parts["chunks"].kept == 1
        # Without the leftover (chunks alone at 400) the 700-token chunk could not have fitted.
        assert allocation.parts["chunks"].nominal == 400

    def test_every_share_zero_keeps_only_fixed_costs(self):
        config = BudgetConfig(
            context_window=1000,
            system=0,
            tool_schemas=0,
            history=0,
            chunks=0,
            tool_results=0,
            output_reserve=0,
        )
        allocation = allocate_budget(
            config, fixed=FIXED, item_costs={"chunks": [10], "history": [5], "tool_schemas": [3]}
        )
        assert allocation.output_reserve == 0
        assert all(part.allowed == 0 and part.used == 0 for part in allocation.parts.values())
        assert allocation.parts["chunks"].dropped == 1
        assert allocation.parts["chunks"].truncated_to is None
        assert allocation.total == 60

    def test_one_huge_chunk_is_truncated_to_the_whole_allowance(self):
        allocation = allocate_budget(
            BudgetConfig(context_window=1000), fixed=FIXED, item_costs={"chunks": [5000, 10]}
        )
        chunks = allocation.parts["chunks"]
        assert (chunks.kept, chunks.dropped, chunks.truncated_to, chunks.used) == (1, 1, 890, 890)

    def test_huge_chunk_dropped_when_allowance_too_small_to_be_useful(self):
        config = BudgetConfig(context_window=1000, min_truncated_chunk_tokens=900)
        allocation = allocate_budget(config, fixed=FIXED, item_costs={"chunks": [5000]})
        assert allocation.parts["chunks"].kept == 0
        assert allocation.parts["chunks"].truncated_to is None

    def test_huge_lower_ranked_chunk_is_dropped_not_truncated(self):
        allocation = allocate_budget(
            BudgetConfig(context_window=1000), fixed=FIXED, item_costs={"chunks": [100, 5000, 10]}
        )
        chunks = allocation.parts["chunks"]
        assert (chunks.kept, chunks.dropped, chunks.used, chunks.truncated_to) == (1, 2, 100, None)

    def test_many_tiny_chunks_fill_the_allowance_exactly(self):
        allocation = allocate_budget(
            BudgetConfig(context_window=1000), fixed=FIXED, item_costs={"chunks": [1] * 1000}
        )
        assert allocation.parts["chunks"].kept == 890
        assert allocation.parts["chunks"].dropped == 110
        assert allocation.total == 950  # exactly the limit

    def test_fixed_overflow_squeezes_lowest_priority_part(self):
        # fixed 300 -> available 650: chunks 400, tool results 100, schemas 150, history 0.
        allocation = allocate_budget(
            BudgetConfig(context_window=1000),
            fixed={"system": 300},
            item_costs={"history": [10], "chunks": [1]},
        )
        assert allocation.parts["history"].allowed == 0
        assert allocation.parts["history"].dropped == 1
        # history and schemas/tool results unused -> chunks may use 400 + 100 + 150 = 650.
        assert allocation.parts["chunks"].allowed == 650

    def test_window_smaller_than_fixed_costs(self):
        with pytest.raises(WindowTooSmallError, match="smaller than the fixed costs") as info:
            allocate_budget(BudgetConfig(context_window=100), fixed={"system": 98}, item_costs={})
        assert (info.value.window, info.value.fixed_total, info.value.output_reserve) == (100, 98, 5)

    def test_bad_inputs_rejected(self):
        with pytest.raises(BudgetConfigError, match="unknown budget parts"):
            allocate_budget(BudgetConfig(), fixed={}, item_costs={"images": [1]})
        with pytest.raises(BudgetConfigError, match=">= 0"):
            allocate_budget(BudgetConfig(), fixed={"system": -1}, item_costs={})

    def test_report_is_plain_json(self):
        allocation = allocate_budget(
            BudgetConfig(context_window=1000), fixed=FIXED, item_costs={"chunks": [5000]}
        )
        report = json.loads(json.dumps(allocation.to_dict()))
        assert report["parts"]["chunks"] == {
            "share": 400,
            "allowed": 890,
            "used": 890,
            "kept": 1,
            "dropped": 0,
            "truncated_to": 890,
        }
        assert report["system"] == {"share": 100, "used": 60}
        assert report["total"] == 950
