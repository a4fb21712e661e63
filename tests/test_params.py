from __future__ import annotations

import pytest

from lab.params import (PUBLISHED_LEVELS, ConfigError, default_split, from_env,
                        parse_cpus, parse_duration, parse_levels)

KNOWN = ["grizzly", "aws", "nginx"]
CPUS = {0, 1}


def params(**env: str):
    return from_env(env, KNOWN, ["siege"], CPUS)


def test_defaults_are_the_published_setup() -> None:
    p = params()
    assert p.levels == PUBLISHED_LEVELS
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
    ({"CLIENT": "ab"}, "known clients are siege"),
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
