from __future__ import annotations

from pathlib import Path

import pytest

from haygraph.adapters.service.errors import ServiceConfigError
from haygraph.adapters.service.settings import ServiceSettings, is_loopback


class TestServiceSettings:
    def test_without_keys_only_loopback(self) -> None:
        with pytest.raises(ServiceConfigError, match=r"without --api-keys it binds to 127\.0\.0\.1 only"):
            ServiceSettings(store_dir=Path("kb"), host="0.0.0.0")
        assert (
            ServiceSettings(store_dir=Path("kb"), host="0.0.0.0", api_keys=Path("k.yaml")).host == "0.0.0.0"
        )
        assert ServiceSettings(store_dir=Path("kb"), host="localhost").host == "localhost"

    @pytest.mark.parametrize(
        ("field", "value", "flag"),
        [
            ("port", 70000, "--port"),
            ("request_timeout_s", 0, "--timeout"),
            ("max_body_bytes", 10, "--max-body-bytes"),
            ("resync_every_s", 0, "--resync-every"),
            ("crawl_max_pages", 0, "--crawl-max-pages"),
            ("crawl_delay_s", 61, "--crawl-delay"),
        ],
    )
    def test_bad_values_name_the_flag(self, field: str, value: float, flag: str) -> None:
        with pytest.raises(ServiceConfigError, match=flag):
            ServiceSettings(store_dir=Path("kb"), **{field: value})  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("threads_db", "backend"),
        [
            (None, "memory"),
            ("t.sqlite", "sqlite"),
            ("postgresql://u@h/db", "postgres"),
            ("postgres://h/db", "postgres"),
        ],
    )
    def test_threads_backend(self, threads_db: str | None, backend: str) -> None:
        assert ServiceSettings(store_dir=Path("kb"), threads_db=threads_db).threads_backend == backend


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("0.0.0.0", False), ("example.org", False)],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
