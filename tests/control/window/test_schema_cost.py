from haygraph.control.window.schema_cost import schema_saving, schema_tokens
from haygraph.control.window.tokens import TokenCounter


class CharCounter(TokenCounter):
    """Test counter: one token per character, so JSON lengths are easy to work out by hand."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


class TestSchemaSaving:
    def test_subset_against_registry(self):
        a = {"name": "a"}  # '{"name":"a"}' = 12 characters
        b = {"name": "bb"}  # 13
        c = {"name": "ccc"}  # 14
        counter = CharCounter()
        assert schema_tokens([a, b, c], counter) == 39
        saving = schema_saving([a], [a, b, c], counter)
        assert (saving.selected_tokens, saving.registry_tokens, saving.saved_tokens) == (12, 39, 27)
        assert saving.to_dict() == {
            "selected_tokens": 12,
            "registry_tokens": 39,
            "saved_tokens": 27,
            "saved_ratio": 0.6923,
        }

    def test_empty_registry(self):
        assert schema_saving([], [], CharCounter()).saved_ratio == 0.0
