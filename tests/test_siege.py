from __future__ import annotations

from pathlib import Path

import pytest

from lab.measure.clients import ClientError, Load, Options
from lab.measure.clients.siege import Siege, parse, write_rc

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> tuple[str, str]:
    return ((FIXTURES / f"{name}.out").read_text(), (FIXTURES / f"{name}.err").read_text())


def test_a_real_run() -> None:
    level = parse(*fixture("siege-ok"))
    assert level.transactions == 24927 == level.successful
    assert level.failed == 0 and level.availability_pct == 100.0
    assert level.elapsed_s == 1.87 and level.rate_rps == 13329.95
    # mean response time from Siege's own sum (concurrency = sum of times / elapsed)
    assert level.in_flight == 3.43
    assert level.resp_ms == pytest.approx(3.43 / 13329.95 * 1000)
    assert level.longest_ms == 10.0


def test_zero_transactions_when_refused() -> None:
    level = parse(*fixture("siege-refused"))
    assert level.transactions == 0 and level.failed == 1027
    assert level.rate_rps == 0 and level.resp_ms == 0


def test_unresolvable_host_counts_failures() -> None:
    level = parse(*fixture("siege-dns"))
    assert level.transactions == 0 and level.failed == 25


def test_warning_printed_before_the_json() -> None:
    out, err = fixture("siege-capped")
    warning, json_part = out.split("{", 1)
    assert "WARNING" in warning                     # the fixture is what it says
    level = parse(out, err)
    # the figures are the JSON's, read past the warning, not zeros from a fallback
    assert level == parse("{" + json_part, err)
    assert level.failed == 2023 and level.elapsed_s == 0.14 and level.transactions == 0


def test_killed_siege_has_no_statistics() -> None:
    with pytest.raises(ClientError, match="siege printed no statistics: no output"):
        parse(*fixture("siege-killed"))


def test_errors_are_shown_when_there_is_no_json() -> None:
    with pytest.raises(ClientError, match="unable to connect"):
        parse("", "[error] socket: unable to connect sock.c:282: Connection refused\n")


def test_rc_file_sets_the_connection_mode(tmp_path: Path) -> None:
    close = write_rc(tmp_path / "close", keepalive=False).read_text()
    keep = write_rc(tmp_path / "keep", keepalive=True).read_text()
    assert "\nconnection = close\n" in close and "keep-alive" not in close.split("connection =")[-1]
    assert "\nconnection = keep-alive\n" in keep
    assert "json_output = true" in keep


def test_command_always_passes_the_lab_rc(tmp_path: Path) -> None:
    s = Siege()
    with pytest.raises(ClientError):
        s.command("http://127.0.0.1:1/api", Load(concurrency=4), 10)
    s.rc = write_rc(tmp_path / "siegerc", keepalive=False)
    assert s.command("http://127.0.0.1:1/api", Load(concurrency=4), 10) == [
        "siege", "-R", str(tmp_path / "siegerc"), "-b", "-t10S", "-c4", "http://127.0.0.1:1/api"]
    with pytest.raises(ClientError, match="not a rate"):
        s.command("http://127.0.0.1:1/api", Load(rate=1000), 10)


def test_a_run_keeps_the_rc_it_started_with(tmp_path: Path) -> None:
    Siege().prepare(tmp_path, Options(keepalive=True, threads=1))
    (tmp_path / "siegerc").write_text("connection = keep-alive\n# as recorded\n")
    again = Siege()
    again.prepare(tmp_path, Options(keepalive=False, threads=1))            # a later step of the same run
    assert again.rc == tmp_path / "siegerc"
    assert "# as recorded" in (tmp_path / "siegerc").read_text()
