from __future__ import annotations

import json
from pathlib import Path

import pytest

from haygraph.adapters.service.errors import AuthenticationError, ServiceConfigError
from haygraph.adapters.service.keys import Caller, load_api_keys, parse_api_keys

KEY_A = "hg-tenant-a-0123456789"
KEY_B = "hg-tenant-b-9876543210"


class TestLoadApiKeys:
    def test_yaml_file_maps_keys_to_tenants_and_tools(self, tmp_path: Path) -> None:
        path = tmp_path / "keys.yaml"
        path.write_text(f'"{KEY_A}": {{tenant: A}}\n"{KEY_B}": {{tenant: B, tools: [today]}}\n')
        ring = load_api_keys(path)
        assert len(ring) == 2
        assert ring.authenticate(f"Bearer {KEY_A}") == Caller(tenant="A", tools=None)
        assert ring.authenticate(f"bearer  {KEY_B} ") == Caller(tenant="B", tools=("today",))

    def test_json_file(self, tmp_path: Path) -> None:
        path = tmp_path / "keys.json"
        path.write_text(json.dumps({KEY_A: {"tenant": "A"}}))
        assert load_api_keys(path).authenticate(f"Bearer {KEY_A}").tenant == "A"

    @pytest.mark.parametrize(
        ("content", "expected"),
        [
            ("[1, 2]", "must map each API key"),
            ('"short": {tenant: A}', "at least 16 characters"),
            (f'"{KEY_A}": {{tools: [today]}}', "tenant: Field required"),
            (f'"{KEY_A}": {{tenant: A, tenants: B}}', "tenants: Extra inputs are not permitted"),
            (f'"{KEY_A}": {{tenant: ""}}', "tenant: String should have at least 1 character"),
            ("{}", "defines no keys"),
            ("a: [b", "not valid YAML/JSON"),
        ],
    )
    def test_bad_files_name_the_problem(self, tmp_path: Path, content: str, expected: str) -> None:
        path = tmp_path / "keys.yaml"
        path.write_text(content)
        with pytest.raises(ServiceConfigError, match=expected.replace("[", r"\[")):
            load_api_keys(path)

    def test_errors_never_echo_the_key(self, tmp_path: Path) -> None:
        path = tmp_path / "keys.yaml"
        path.write_text(f'"{KEY_A}": {{tenant: A, extra: 1}}\n')
        with pytest.raises(ServiceConfigError) as info:
            load_api_keys(path)
        assert KEY_A not in str(info.value) and "key #1 (hg-t…)" in str(info.value)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(ServiceConfigError, match="cannot read --api-keys file"):
            load_api_keys(tmp_path / "absent.yaml")


class TestAuthenticate:
    ring = parse_api_keys({KEY_A: {"tenant": "A"}})

    @pytest.mark.parametrize(
        ("header", "expected"),
        [
            (None, "missing API key"),
            ("", "missing API key"),
            (f"Basic {KEY_A}", "malformed Authorization header"),
            ("Bearer ", "malformed Authorization header"),
            ("Bearer hg-tenant-a-0123456788", "invalid API key"),
        ],
    )
    def test_rejected(self, header: str | None, expected: str) -> None:
        with pytest.raises(AuthenticationError, match=expected):
            self.ring.authenticate(header)


def test_manual_keys_example_is_valid() -> None:
    import yaml

    from tests.manual import manual_blocks

    block = next(b for b in manual_blocks("yaml") if "tenant:" in b)
    ring = parse_api_keys(yaml.safe_load(block))
    assert ring.authenticate("Bearer hg-globex-8a1e5c3f7b") == Caller(
        tenant="globex", tools=("today", "search_knowledge_base")
    )


@pytest.mark.parametrize("tenant", ["   ", "A\u200b", "x" * 200])
def test_an_unusable_tenant_is_a_config_error(tenant: str) -> None:
    with pytest.raises(ServiceConfigError, match="tenant"):
        parse_api_keys({"hg-0123456789abcdef": {"tenant": tenant}})
