import pytest

from haygraph.control.errors import ConfigError
from haygraph.control.window.entities import (
    ENTITY_KINDS,
    EntityConfig,
    extract_entities,
    format_entities,
    merge_entities,
)

# A declared kind, as a tool's offline trigger declares it (the example query_order's order numbers).
ORDERS = EntityConfig(patterns=(("order_ids", r"(?<!\d)\d{12}(?!\d)"),))


class TestExtractEntities:
    def test_english_formats(self):
        found = extract_entities(
            "Order 123456789012 placed on 2024-05-12 for $120 (also 1,200.50 dollars). "
            "Contact Bob@Example.com, employee id E-1234, user U12345. It ships May 20, 2024 "
            "or 3 June 2024, maybe June 5, or next Monday.",
            ORDERS,
        )
        assert found["order_ids"] == ["123456789012"]
        assert found["dates"] == ["2024-05-12", "2024-05-20", "2024-06-03", "06-05", "next monday"]
        assert found["money"] == ["120 USD", "1200.5 USD"]
        assert found["user_ids"] == ["E-1234", "U12345"]
        assert found["emails"] == ["bob@example.com"]

    def test_chinese_formats(self):
        found = extract_entities(
            "我的订单号是987654321098，2024年5月12日下单，付了300元，另付人民币450元和￥20.50，"
            "工号 12345，希望下周一送达，最晚5月20号，日期2024/5/3。",
            ORDERS,
        )
        assert found["order_ids"] == ["987654321098"]
        assert found["dates"] == ["2024-05-12", "下周一", "05-20", "2024-05-03"]
        assert found["money"] == ["300 CNY", "450 CNY", "20.5 CNY"]
        assert found["user_ids"] == ["12345"]

    def test_same_amount_in_two_notations_is_one_entity(self):
        assert extract_entities("$120 or 120 USD")["money"] == ["120 USD"]
        assert extract_entities("¥300 即 300元")["money"] == ["300 CNY"]

    def test_spans_are_not_read_twice(self):
        found = extract_entities(
            "1234567890123 is 13 digits; 2024-05-12 is a date; 20240512 is nothing", ORDERS
        )
        assert found["order_ids"] == []  # 13 digits is not a 12-digit order id
        assert found["money"] == []  # the date's digits are not an amount
        assert found["dates"] == ["2024-05-12"]

    def test_invalid_dates_ignored(self):
        assert extract_entities("2024-13-40 and 13月45日")["dates"] == []

    def test_products_from_list_and_patterns(self):
        config = EntityConfig(product_names=("ThinkPad X1", "小米手环"))
        found = extract_entities(
            "My thinkpad x1 and 小米手环 broke; 型号 X-200; model AB12; 《智能音箱》", config
        )
        assert found["products"] == ["ThinkPad X1", "小米手环", "X-200", "AB12", "智能音箱"]
        # "model" without a digit is not a product; quoted names can be switched off.
        assert extract_entities("the language model is good")["products"] == []
        assert extract_entities("《手册》", EntityConfig(quoted_products=False))["products"] == []

    def test_every_kind_present_and_empty_text(self):
        assert extract_entities("") == {kind: [] for kind in ENTITY_KINDS}
        assert extract_entities("", ORDERS) == {**{kind: [] for kind in ENTITY_KINDS}, "order_ids": []}

    def test_declared_kinds_only(self):
        # no domain ids are built in: a 12-digit number is an order id only where a tool declares it
        assert "order_ids" not in extract_entities("order 123456789012")
        assert extract_entities("order 123456789012", ORDERS)["order_ids"] == ["123456789012"]
        # declared kinds never steal a date or an amount
        found = extract_entities("2024-05-12 or $120", EntityConfig(patterns=(("codes", r"\d+"),)))
        assert (found["dates"], found["money"], found["codes"]) == (["2024-05-12"], ["120 USD"], [])

    def test_bad_declared_pattern_is_a_config_error(self):
        with pytest.raises(ConfigError, match="pattern of 'ids' is not a valid regular expression"):
            EntityConfig(patterns=(("ids", "(unclosed"),))


class TestMergeEntities:
    def test_union_without_duplicates_most_recent_last(self):
        old = {"order_ids": ["111111111111", "222222222222"], "dates": ["2024-05-12"]}
        new = {"order_ids": ["111111111111", "333333333333"]}
        merged = merge_entities(old, new)
        assert merged["order_ids"] == ["222222222222", "111111111111", "333333333333"]
        assert merged["dates"] == ["2024-05-12"]
        assert set(ENTITY_KINDS) <= set(merged)

    def test_bounded_per_kind_keeps_most_recent(self):
        batches = [{"order_ids": [f"{i:012d}"]} for i in range(15)]
        merged = merge_entities(*batches, max_per_kind=4)
        assert merged["order_ids"] == [f"{i:012d}" for i in range(11, 15)]

    def test_bad_bound_rejected(self):
        with pytest.raises(ValueError, match="max_per_kind"):
            merge_entities({}, max_per_kind=0)


class TestFormatEntities:
    def test_only_non_empty_kinds(self):
        text = format_entities({"order_ids": ["123456789012"], "dates": [], "money": ["120 USD", "5 EUR"]})
        assert text == "order_ids: 123456789012\nmoney: 120 USD, 5 EUR"
