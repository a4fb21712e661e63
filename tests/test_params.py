from __future__ import annotations

import pytest

from lab.setup.fromenv import from_env
from lab.setup.params import (PUBLISHED_LEVELS, ConfigError, default_split, parse_cpus,
                        parse_duration, parse_levels)

pytestmark = pytest.mark.unit

KNOWN = ["grizzly", "aws", "nginx"]
CPUS = {0, 1}


CLIENTS = {"siege": "concurrency", "wrk": "concurrency", "vegeta": "rate"}


def params(**env: str):
    return from_env(env, KNOWN, CLIENTS, CPUS)


def test_defaults_are_the_published_setup() -> None:
    p = params()
    assert p.concurrencies == PUBLISHED_LEVELS
    assert p.duration_s == 10 and not p.keepalive and p.client == "siege"
    assert p.servers == ("aws",) and p.workers is None and p.port == 8080
    assert p.server_cpus == (0,) and p.client_cpus == (1,) and not p.warnings


def test_all_means_every_known_server() -> None:
    assert params(SERVER="all").servers == tuple(KNOWN)
    assert params(SERVER="nginx  grizzly").servers == ("nginx", "grizzly")


@pytest.mark.parametrize("env, fragment", [
    ({"SERVER": "tomcatt"}, "unknown server tomcatt; known: grizzly, aws, nginx"),
    ({"SERVER": ""}, "SERVER is empty"),
    ({"SERVER": "aws aws"}, "twice"),
    ({"CONCURRENCY": ""}, "CONCURRENCY is empty"),
    ({"CONCURRENCY": "1 two 3"}, "two is not a positive whole number"),
    ({"CONCURRENCY": "0 4"}, "0 is not a positive"),
    ({"CONCURRENCY": "-3"}, "-3 is not"),
    ({"CONCURRENCY": "2000"}, "limit of 1000"),
    ({"DURATION": "10"}, None),
    ({"DURATION": "ten"}, "like 10s or 1m"),
    ({"DURATION": "10h"}, "like 10s or 1m"),
    ({"DURATION": "0s"}, "longer than 0s"),
    ({"KEEPALIVE": "yes"}, "expected 0 or 1"),
    ({"CLIENT_GRACE": "soon"}, "CLIENT_GRACE"),
    ({"WORKERS": "0"}, "WORKERS='0'"),
    ({"WORKERS": "many"}, "WORKERS='many'"),
    ({"PORT": "80"}, "from 1024 to 65535"),
    ({"CLIENT": "ab"}, "known clients are siege, wrk, vegeta"),
    ({"REPEAT": "0"}, "REPEAT='0': expected a whole number from 1 to 100"),
    ({"REPEAT": "many"}, "REPEAT="),
    ({"WARMUP": "soon"}, "WARMUP='soon'"),
    ({"WARMUP_MAX": "0"}, "longer than 0s"),
    ({"CLIENT_THREADS": "0", "CLIENT": "wrk"}, "CLIENT_THREADS='0'"),
    ({"AXIS": "speed"}, "AXIS='speed': expected one of concurrency, rate, workers, backlog"),
    ({"AXIS": "rate"}, "siege varies concurrency, not rate"),
    ({"CLIENT": "vegeta", "AXIS": "concurrency"}, "vegeta varies rate, not concurrency"),
    ({"CLIENT": "vegeta", "RATE": "1000 fast"}, "RATE: fast is not a positive whole number"),
    ({"AXIS": "workers", "CONCURRENCY": "32"}, "AXIS=workers needs VALUES"),
    ({"AXIS": "workers", "VALUES": "1 2"}, "give one CONCURRENCY level (got 18)"),
    ({"AXIS": "workers", "VALUES": "1 x", "CONCURRENCY": "8"}, "VALUES: x is not"),
    ({"AXIS": "workers", "VALUES": "1 2", "CONCURRENCY": "8", "WORKERS": "4"}, "unset WORKERS"),
    ({"VALUES": "1 2"}, "VALUES is for a knob axis"),
    ({"VERDICT_AT": "11"}, "VERDICT_AT: 11 is not a swept value"),
    ({"BIND": "localhost"}, "BIND='localhost': expected an IP address"),
    ({"BIND": "300.1.1.1"}, "expected an IP address"),
    ({"BACKLOG": "0"}, "BACKLOG='0'"),
    ({"BACKLOG": "70000"}, "from 1 to 65535"),
    ({"PROBE": "yes"}, "PROBE='yes': expected 0 or 1"),
    ({"SERVER": "aws@0"}, "after @ comes a worker count"),
    ({"SERVER": "aws@x"}, "after @ comes a worker count"),
    ({"SERVER": "aws@²"}, "after @ comes a worker count"),
    ({"SERVER": "nope@4"}, "unknown server nope@4"),
    ({"SERVER": "aws@4", "AXIS": "workers", "VALUES": "1 2", "CONCURRENCY": "8"}, "drop the @N"),
    ({"FORCE": "2"}, "FORCE='2': expected 0 or 1"),
    ({"SERVER_CPUS": "7"}, "CPU 7 does not exist here (usable: 0,1)"),
    ({"CLIENT_CPUS": "1-0"}, "runs backwards"),
    ({"CLIENT_CPUS": "a"}, "expected a CPU list"),
])
def test_bad_input_says_what_is_wrong(env: dict[str, str], fragment: str | None) -> None:
    if fragment is None:
        params(**env)
        return
    with pytest.raises(ConfigError) as err:
        params(**env)
    assert fragment in str(err.value)


def test_levels_are_sorted_and_unique() -> None:
    assert parse_levels("8, 1 32 8") == (1, 8, 32)


def test_durations() -> None:
    assert parse_duration("D", "10s") == 10
    assert parse_duration("D", "2m") == 120
    assert parse_duration("D", "0", allow_zero=True) == 0


def test_cpu_lists() -> None:
    assert parse_cpus("X", "0-2,5", {0, 1, 2, 3, 4, 5}) == (0, 1, 2, 5)
    assert default_split({0, 1, 2, 3}) == ((0, 1), (2, 3))
    assert default_split({3}) == ((3,), (3,))


def test_shared_cpus_are_allowed_with_a_warning() -> None:
    p = params(SERVER_CPUS="0-1", CLIENT_CPUS="1")
    assert p.server_cpus == (0, 1) and p.client_cpus == (1,)
    assert "share CPU 1" in p.warnings[0]


def test_new_settings_defaults_and_values() -> None:
    p = params()
    assert p.repeat.least == p.repeat.most == 1 and not p.repeat.auto and p.warmup_auto and p.warmup_max_s == 60
    assert p.bind == "127.0.0.1" and p.backlog == 512 and p.probe and not p.force
    assert p.axis == "concurrency" and p.values == PUBLISHED_LEVELS and p.client_threads == 1
    v = params(CLIENT="vegeta", RATE="2000 1000")
    assert v.axis == v.load_axis == "rate" and v.values == v.rates == (1000, 2000) and not v.concurrencies
    k = params(AXIS="workers", VALUES="16 1 4", CONCURRENCY="32")
    assert k.values == (1, 4, 16) and k.load == (32,) and k.load_axis == "concurrency"
    assert params(WARMUP="30s").warmup_s == 30 and not params(WARMUP="0").warmup_auto
    assert params(VERDICT_AT="8", CONCURRENCY="1 8").verdict_at == (8,)
    assert params(BIND="::1").bind == "::1"
    assert params(SERVER="aws aws@16").servers == ("aws", "aws@16")
    assert "every interface" in params(BIND="0.0.0.0").warnings[0]


@pytest.mark.parametrize("name, value", [
    ("WORKERS", "²"),                      # superscript two
    ("DURATION", "١٠s"),                   # Arabic-Indic ten
    ("CONCURRENCY", "１ 8"),               # fullwidth one
    ("PORT", "８０８０"),                   # fullwidth 8080
    ("REPEAT", "³"),                       # superscript three
])
def test_only_ascii_digits_are_numbers(name: str, value: str) -> None:
    # str.isdigit() and int() accept these; the lab must not run with them
    with pytest.raises(ConfigError, match=name):
        params(**{name: value})
    with pytest.raises(ConfigError, match=name):
        from_env({name: value}, KNOWN, {"siege": "concurrency", "vegeta": "rate"}, CPUS)
