from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from haygraph.adapters.cli.main import main
from haygraph.adapters.cli.serve import duration


def test_help_does_not_import_the_web_stack() -> None:
    code = (
        "import sys\n"
        "from haygraph.adapters.cli.main import main\n"
        "try:\n    main(['serve', '--help'])\nexcept SystemExit:\n    pass\n"
        "web = {'fastapi', 'uvicorn', 'starlette', 'psycopg'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & web))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "--api-keys FILE" in done.stdout and "--threads-db" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "error: --host 0.0.0.0 would expose the service without authentication"),
        (["--timeout", "0"], "error: --timeout must be > 0 seconds, but got 0.0"),
        (["--api-keys", "absent.yaml"], "error: cannot read --api-keys file 'absent.yaml'"),
    ],
)
def test_bad_settings_are_one_line_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--store", str(tmp_path / "kb"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


@pytest.mark.integration
def test_missing_store_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--store", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: store directory") and "haygraph index" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "seconds"), [("6h", 21600.0), ("30m", 1800.0), ("1d", 86400.0), ("90s", 90.0), ("2.5", 2.5)]
)
def test_resync_every_reads_a_duration(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "-1h", "soon", "h", "6w", "inf"])
def test_resync_every_refuses_a_bad_duration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--store", str(tmp_path / "kb"), "--resync-every", text])
    assert "--resync-every" in capsys.readouterr().err
