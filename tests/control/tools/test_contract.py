from typing import Literal

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from haygraph.control.tools import (
    ToolContract,
    ToolContractError,
    ToolRegistrationError,
    ToolRegistry,
    ToolRuntimeInfo,
    format_validation_error,
)


class OrderArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: str = Field(pattern=r"^\d{12}$", description="The 12-digit order number. Never guess it.")
    detail_level: Literal["summary", "full"] = "summary"


class OrderOut(BaseModel):
    order_id: str
    detail_level: str


def _contract(name="query_order", intents=("order",), func=None, **kw) -> ToolContract:
    return ToolContract(
        name=name,
        purpose="Look up an order.",
        when_to_use="The user gave an order number.",
        when_not_to_use="If the user gave no order number, ask for it; never guess.",
        on_failure="Tell the user the order system is unavailable.",
        args_model=OrderArgs,
        result_model=OrderOut,
        func=func or (lambda a: {"order_id": a.order_id, "detail_level": a.detail_level}),
        intents=intents,
        **kw,
    )


class TestToolContract:
    def test_model_schema_is_generated_from_args_model_with_usage_texts(self):
        schema = _contract().model_schema()
        fn = schema["function"]
        assert schema["type"] == "function" and fn["name"] == "query_order"
        assert "Look up an order." in fn["description"]
        assert "When to use: The user gave an order number." in fn["description"]
        assert (
            "When not to use: If the user gave no order number, ask for it; never guess." in fn["description"]
        )
        assert "On failure: Tell the user the order system is unavailable." in fn["description"]
        params = fn["parameters"]
        assert params["required"] == ["order_id"]
        assert params["additionalProperties"] is False
        assert params["properties"]["order_id"]["pattern"] == r"^\d{12}$"
        assert params["properties"]["detail_level"]["enum"] == ["summary", "full"]
        assert params["properties"]["detail_level"]["default"] == "summary"
        assert "Never guess" in params["properties"]["order_id"]["description"]

    def test_langchain_tool_has_same_name_description_and_parameters(self):
        contract = _contract()
        tool = contract.as_langchain_tool()
        converted = convert_to_openai_tool(tool)["function"]
        assert converted["name"] == "query_order"
        assert converted["description"] == contract.description
        assert set(converted["parameters"]["properties"]) == {"order_id", "detail_level"}
        assert tool.invoke({"order_id": "202405120001"}) == {
            "order_id": "202405120001",
            "detail_level": "summary",
        }
        with pytest.raises(ValidationError):
            tool.invoke({"order_id": "12"})

    def test_func_declaring_runtime_receives_it(self):
        seen = []

        def func(args, runtime):
            seen.append(runtime)
            return {"order_id": args.order_id, "detail_level": "full"}

        contract = _contract(func=func)
        runtime = ToolRuntimeInfo(request_id="r" * 24, thread_id="t", call_id="c")
        out = contract.invoke(contract.validate_args({"order_id": "202405120001"}), runtime)
        assert out == OrderOut(order_id="202405120001", detail_level="full")
        assert seen == [runtime]

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"name": "bad name!"}, "tool name must match"),
            ({"timeout_s": 0}, "timeout_s must be > 0"),
            ({"max_retries": -1}, "max_retries must be >= 0"),
            ({"key_fields": ("nope",)}, "key_fields ['nope']"),
            ({"purpose": "  "}, "purpose must not be empty"),
        ],
    )
    def test_malformed_contract_raises_with_the_bad_value(self, change, message):
        kwargs = {"name": "query_order", **change}
        with pytest.raises(ToolContractError, match=message.replace("[", r"\[").replace("]", r"\]")):
            if "purpose" in change:
                ToolContract(
                    name="x",
                    purpose="  ",
                    when_to_use="a",
                    when_not_to_use="b",
                    on_failure="c",
                    args_model=OrderArgs,
                    result_model=OrderOut,
                    func=lambda a: a,
                )
            else:
                _contract(**kwargs)

    def test_format_validation_error_names_fields_and_inputs(self):
        with pytest.raises(ValidationError) as info:
            OrderArgs.model_validate({"order_id": "123", "detail_level": "huge", "foo": 1})
        text = format_validation_error(info.value)
        assert "order_id: String should match pattern '^\\d{12}$' (got '123')" in text
        assert "detail_level: Input should be 'summary' or 'full' (got 'huge')" in text
        assert "foo: Extra inputs are not permitted" in text


class TestToolRegistry:
    def test_register_get_names_and_duplicates(self):
        registry = ToolRegistry([_contract()])
        assert registry.names() == ["query_order"]
        assert registry.get("query_order").name == "query_order"
        assert registry.get("missing") is None
        with pytest.raises(ToolRegistrationError, match="already registered"):
            registry.register(_contract())

    def test_schemas_for_returns_only_relevant_and_allowed_tools(self):
        registry = ToolRegistry(
            [
                _contract("query_order", ("order",)),
                _contract("update_shipping_address", ("order",)),
                _contract("search_knowledge_base", ("knowledge",)),
                _contract("today", ("*",)),
            ]
        )
        allow = ["query_order", "search_knowledge_base", "today"]
        names = [s["function"]["name"] for s in registry.schemas_for("order", allow)]
        assert names == ["query_order", "today"]
        names = [s["function"]["name"] for s in registry.schemas_for("knowledge", allow)]
        assert names == ["search_knowledge_base", "today"]
        assert [c.name for c in registry.allowed(["update_shipping_address", "ghost"])] == [
            "update_shipping_address"
        ]
