"""Vegeta, open loop: requests sent at a fixed rate whatever the server does.

A closed-loop client waits for a response before sending the next request,
so a slow server also slows the load and hides its own queueing
(coordinated omission). Vegeta sends on a schedule and, with no cap on its
workers, starts another worker rather than wait for a busy one.

The command is one shell pipeline, so that the sweep's wait4 rusage of the
shell counts both vegeta processes and the shell's stdout is the report:

    printf 'GET URL\\n' | vegeta attack -rate=R/s ... | vegeta report -type=json -every=1s

`-every=1s` writes a running (cumulative) report each second before the
final one: the per-second series of responses (lab.record.series) at the cost of
one small JSON line a second; the final report is the last line.

`report` decodes the results while the attack runs instead of after it (with
`attack -output FILE` then `report FILE`), so the command lasts as long as
the attack: the sweep divides the server's and the client's CPU by that
time. Its decoding runs on the client's CPUs, and is counted there.
The raw results are not kept: about 230 bytes a request (body and headers
included), 46 MB for 10 s at 20,000 req/s, and a `tee` to write them would
be client CPU too. Except where several client hosts share a level: there
each host `tee`s them into a file of its own (distribution_command), counts
their latencies per microsecond after the level (distribution_after) and
removes the file, so that the level's percentiles are those of every
response (lab.record.histogram), not the worst host's.

The target goes in on stdin rather than as a file: the URL is known only in
command(), and the recorded command then says exactly what was attacked.
The asked rate is written to stderr ("offered_rps=R") so that the saved
output alone says what was offered.

Counting, as siege and wrk count: a transaction is a response (vegeta's
status code 0 is a request that got none: refused, reset, timed out);
2xx/3xx are successful; failed is every other request.

Connections: with no cap (vegeta's default), an open loop past the
server's pace opens a connection for every request still waiting. They are
reused while the server keeps them (a request's body is read whole, so the
connection goes back to Go's pool), but a server with a fixed number of
connection slots closes the others: AWS, with 5 tasks, closed every
connection past them ("EOF", "server closed idle connection"), so each
request paid for a new connection, the client's CPU and the ports went to
handshakes, tens of thousands of sockets piled up in TIME_WAIT, and levels
the server could serve fell to a few hundred requests/s or less (workshop
exercise 6). CONNECTIONS=N caps them (`-max-connections`): the requests past
them wait in vegeta, and their wait is in their latency.

Vegeta is no Debian package: install() builds the pinned version with Go
into the lab cache. Only CLIENT=vegeta needs Go.
"""
from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

from lab.record import failures as kinds
from lab.measure import hostinfo
from lab.setup import paths
from lab.record import histogram, series
from lab.measure.clients import ClientError, Load, Options, target
from lab.record.histogram import Histogram
from lab.record.level import Answers, Level
from lab.record.failures import Failure
from lab.setup.whynot import Reason

MIB = 1024 * 1024        # siege's data_transferred unit
NS_PER_MS = 1e6
OFFERED = re.compile(r"^offered_rps=(\d+)$", re.M)
RESULTS = re.compile(r"^results=(/\S+/vegeta-results\.\w+)$", re.M)
VEGETA_MODULE = "github.com/tsenart/vegeta/v12"
VEGETA_VERSION = "v12.13.0"
GO_MINIMUM = (1, 22)      # vegeta v12.13.0's go.mod
INSTALL_TIMEOUT_S = 1800  # a cold module cache and build took about 2 minutes here


def vegeta_binary(cache: Path) -> Path:
    return paths.go_bin(cache) / "vegeta"


def binary_version(binary: Path) -> str | None:
    """The version the lab's build stamps into `vegeta -version`."""
    return hostinfo.probe_version([str(binary), "-version"], r"Version:\s*(v\S+)")


def go_version(go: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([go, "version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bgo(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def why_not_buildable() -> Reason:
    """Why the Go on PATH cannot build vegeta, or None when it can."""
    wanted = ".".join(map(str, GO_MINIMUM))
    advice = (f"install Go >= {wanted} and put its bin folder first on PATH "
              "(e.g. PATH=/usr/local/go/bin:$PATH); Debian 12's golang-go is 1.19, too old. "
              "Only CLIENT=vegeta needs Go.")
    go = shutil.which("go")
    if go is None:
        return f"CLIENT=vegeta is built with Go, and there is no go on PATH: {advice}"
    have = go_version(go)
    if have is None:
        return f"could not read the version of {go} ('go version'): {advice}"
    if have < GO_MINIMUM:
        return (f"vegeta {VEGETA_VERSION} needs Go >= {wanted}; {go} is "
                f"go{have[0]}.{have[1]}: {advice}")
    return None


def build(cache: Path) -> int:
    """Build the pinned vegeta into <cache>/go/bin unless it is there: 0, or 2 and why."""
    binary = vegeta_binary(cache)
    if binary_version(binary) == VEGETA_VERSION:
        return 0
    problem = why_not_buildable()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    print(f"installing vegeta {VEGETA_VERSION} into {binary.parent}", file=sys.stderr, flush=True)
    # GOTOOLCHAIN=local: the Go that was checked is the Go that builds (no toolchain
    # download); -X stamps the version that `vegeta -version` shows and the check reads.
    env = dict(os.environ, GOBIN=str(binary.parent), GOTOOLCHAIN="local")
    argv = ["go", "install", f"-ldflags=-X main.Version={VEGETA_VERSION}",
            f"{VEGETA_MODULE}@{VEGETA_VERSION}"]
    try:
        out = subprocess.run(argv, env=env, capture_output=True, text=True,
                             timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"error: '{' '.join(argv)}' did not finish: {e}", file=sys.stderr)
        return 2
    got = binary_version(binary)
    if out.returncode != 0 or got != VEGETA_VERSION:
        tail = " | ".join(out.stderr.strip().splitlines()[-5:]) or f"exit {out.returncode}"
        print(f"error: '{' '.join(argv)}' failed ({tail}); {binary} reports {got}",
              file=sys.stderr)
        return 2
    return 0


def report_json(stdout: str) -> dict[str, Any] | None:
    """The final report: the last line (`report -every=1s` writes a running
    report each second before it, each after a clear-screen code)."""
    lines = [line for line in stdout.splitlines() if "{" in line]
    last = lines[-1] if lines else ""
    start = last.find("{")
    stdout = last
    try:
        data = json.loads(stdout[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        return None
    ok = (isinstance(data, dict) and isinstance(data.get("requests"), int)
          and isinstance(data.get("latencies"), dict)
          and isinstance(data.get("status_codes"), dict))
    return data if ok else None


def successes(codes: dict[str, int]) -> int:
    return sum(n for code, n in codes.items() if code.isdigit() and 200 <= int(code) < 400)


STATUS_TEXT = re.compile(r"^\d{3}\b")     # vegeta's error string for a non-2xx answer
WORDS_KEPT = 3                              # distinct error strings kept beside a count
WORDS_CHARS = 200


def failures(codes: dict[str, int], errors: list[str]) -> tuple[Failure, ...]:
    """Status 0 (no response) by the kind its error strings say; vegeta keeps
    the distinct strings, not a count of each, so strings of several kinds
    make one "mixed" count. Every other non-2xx/3xx status, by status."""
    found = []
    no_answer = codes.get("0", 0)
    if no_answer:
        words = [e for e in errors if not STATUS_TEXT.match(e)]
        seen = {kinds.kind_of(e) for e in words}
        kind = seen.pop() if len(seen) == 1 else "mixed" if seen else "other"
        said = "; ".join(e[:WORDS_CHARS] for e in words[:WORDS_KEPT]) or "no error string"
        more = f" (and {len(words) - WORDS_KEPT} more)" if len(words) > WORDS_KEPT else ""
        found.append(Failure(kind, no_answer, f"vegeta: {said}{more}"))
    for code, n in sorted(codes.items()):
        if code != "0" and n and not (code.isdigit() and 200 <= int(code) < 400):
            found.append(Failure("status", n, f"vegeta: status {code}",
                                 int(code) if code.isdigit() else None))
    return tuple(found)


def parse(stdout: str, stderr: str) -> Level:
    data = report_json(stdout)
    if data is None or data["requests"] == 0:
        # a report of nothing: the attack never ran (bad flag, killed), report read no results
        lines = [line for line in stderr.splitlines() if line.strip() and not OFFERED.match(line)]
        raise ClientError("vegeta printed no results: " + (" | ".join(lines[-5:]) or "no output"))
    requests = int(data["requests"])
    codes = {str(k): int(v) for k, v in data["status_codes"].items()}
    transactions = requests - codes.get("0", 0)
    successful = successes(codes)
    failed = requests - successful
    # vegeta's `duration` ends at the last request sent and `wait` at its response:
    # responses are counted over both, as vegeta's own throughput is
    elapsed = (int(data["duration"]) + int(data["wait"])) / 1e9
    lat = data["latencies"]
    mean_ms = lat["mean"] / NS_PER_MS
    offered = OFFERED.search(stderr)
    return Level(
        transactions=transactions,
        successful=successful,
        failed=failed,
        availability_pct=100 * successful / requests,
        elapsed_s=elapsed,
        rate_rps=transactions / elapsed if elapsed > 0 else 0.0,
        resp_ms=mean_ms,
        # Little's law over every request: the mean latency includes the failed ones
        in_flight=requests / elapsed * mean_ms / 1000 if elapsed > 0 else 0.0,
        longest_ms=lat["max"] / NS_PER_MS,
        data_mb=int(data["bytes_in"]["total"]) / MIB,
        p50_ms=lat["50th"] / NS_PER_MS,
        p90_ms=lat["90th"] / NS_PER_MS,
        p99_ms=lat["99th"] / NS_PER_MS,
        offered_rps=float(offered.group(1)) if offered else None,
        failures=failures(codes, [str(e) for e in data.get("errors") or []]),
        counted="body",                          # each result's body, whole
    )


class Vegeta:
    name: ClassVar[str] = "vegeta"
    axis: ClassVar[str] = "rate"
    help: ClassVar[str] = "open loop, a fixed rate (RATE), built with Go into the lab cache"
    packages: ClassVar[dict[str, str]] = {}
    cross_check: ClassVar[str] = ""

    def __init__(self, cache: Path | None = None) -> None:
        self.binary = paths.go_bin(cache or paths.cache_dir()) / "vegeta"
        self.options: Options | None = None
        self.check_body = b""          # what check_parse compares bodies with

    def install(self, cache: Path) -> int:
        return build(cache)

    def version(self) -> str:
        return binary_version(self.binary) or "not installed"

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        """Nothing to write: the target goes in on stdin (see the module's notes)."""
        self.options = options
        return {"tool": "vegeta", "version": self.version(),
                "connection": "keep-alive" if options.keepalive else "close",
                "threads": str(options.threads), "binary": str(self.binary),
                "connections": str(options.connections or "no cap")}

    def attack_flags(self, load: Load, duration_s: int) -> list[str]:
        if load.rate < 0 or load.concurrency < 0:
            raise ClientError(f"vegeta: a negative load {load}")
        if load.rate:
            flags = [f"-rate={load.rate}/s"]
        elif load.concurrency:
            # as fast as C workers go (calibration); vegeta requires the cap with rate 0
            flags = ["-rate=0"]
        else:
            raise ClientError("vegeta needs a rate, or a concurrency to run as fast as it can")
        if load.concurrency:
            flags += [f"-workers={load.concurrency}", f"-max-workers={load.concurrency}"]
        assert self.options is not None
        if self.options.connections:
            # CONNECTIONS: past them a request waits in vegeta for a free
            # connection, and the wait is in its latency (vegeta times a
            # request from when a worker takes it off the schedule)
            flags += [f"-max-connections={self.options.connections}"]
        return flags + [f"-duration={duration_s}s",
                        f"-keepalive={'true' if self.options.keepalive else 'false'}"]

    def command(self, url: str, load: Load, duration_s: int, keep: bool = False) -> list[str]:
        """The level's pipeline; `keep`: its results also written to a new file
        in $LAB_CLIENT_DIR (or $TMPDIR) whose name goes to stderr ("results=F")
        for distribution_after (several client hosts)."""
        if self.options is None:
            raise ClientError("Vegeta.prepare must run first")
        flags = self.attack_flags(load, duration_s)
        vegeta = shlex.quote(str(self.binary))
        kept = ""
        if keep:
            kept = ('f=$(mktemp "${LAB_CLIENT_DIR:-${TMPDIR:-/tmp}}/vegeta-results.XXXXXX") '
                    '&& echo "results=$f" >&2 && ')
        # GOMAXPROCS: CLIENT_THREADS, as wrk's -t (Go's default is one per allowed CPU)
        script = (f"export GOMAXPROCS={self.options.threads}; "
                  + (f"echo offered_rps={load.rate} >&2; " if load.rate else "") + kept
                  + f"printf 'GET %s\\n' {shlex.quote(url)} | "
                  + f"{vegeta} attack {' '.join(flags)} | " + ('tee "$f" | ' if keep else "")
                  + f"{vegeta} report -type=json -every=1s")
        return ["sh", "-c", script]

    def distribution_command(self, url: str, load: Load, duration_s: int) -> list[str]:
        """The level's pipeline with every result also kept in a file (a `tee`
        of vegeta's encoded results: a copy of about 150-250 bytes a request on
        the client's CPUs, the one cost of keeping them)."""
        return self.command(url, load, duration_s, keep=True)

    def distribution_after(self, stdout: str, stderr: str) -> list[str] | None:
        """After the level: the kept results' latencies counted per whole
        microsecond (`vegeta encode -to=csv`, the third field in ns), a
        "<us> <count>" line each, then the file removed."""
        found = RESULTS.search(stderr)
        if found is None:
            return None
        vegeta = shlex.quote(str(self.binary))
        script = (f'{vegeta} encode -to=csv "$1" | '
                  "awk -F, '{c[int($3 / 1000)]++} END {for (v in c) printf \"%d %d\\n\", v, c[v]}'"
                  ' | sort -n && rm -f "$1"')
        return ["sh", "-c", script, "sh", found.group(1)]

    def distribution(self, stdout: str) -> Histogram:
        """distribution_after's output: every result's latency (vegeta's, errors
        included, as its own percentiles count them), to within 1 us."""
        try:
            h = histogram.parse(stdout)
        except ValueError as e:
            raise ValueError(f"vegeta's results gave no latency histogram: {e}") from None
        if not h.count:
            raise ValueError("vegeta's results gave no latency histogram (no result kept)")
        return h

    def parse(self, stdout: str, stderr: str) -> Level:
        return parse(stdout, stderr)

    def check_command(self, url: str, load: Load, duration_s: int, body: bytes) -> list[str]:
        """The level's attack with every result written out (`vegeta encode
        -to=json`, a line each, its body base64) instead of reported: the check
        slice, read by check_parse against `body`."""
        if self.options is None:
            raise ClientError("Vegeta.prepare must run first")
        self.check_body = body
        vegeta = shlex.quote(str(self.binary))
        script = (f"export GOMAXPROCS={self.options.threads}; "
                  + f"printf 'GET %s\\n' {shlex.quote(url)} | "
                  + f"{vegeta} attack {' '.join(self.attack_flags(load, duration_s))} | "
                  + f"{vegeta} encode -to=json")
        return ["sh", "-c", script]

    def check_parse(self, stdout: str, stderr: str) -> Answers:
        """Each result of the check slice: the answers (status 0, no answer, is
        not one), and the successful (2xx/3xx) ones that were not status 200
        with the expected body."""
        checked = wrong = 0
        example = ""
        for line in stdout.splitlines():
            try:
                result = json.loads(line)
                code = int(result["code"])
                body = base64.b64decode(result.get("body") or "")
            except (ValueError, KeyError, TypeError):
                continue
            if code == 0:
                continue
            checked += 1
            if 200 <= code < 400 and (code != 200 or body != self.check_body):
                wrong += 1
                example = example or f"{code} {body[:120].decode('latin-1')}"
        if not checked:
            lines = [x for x in stderr.splitlines() if x.strip()][-5:]
            raise ClientError("vegeta gave no answer to check: " + (" | ".join(lines)
                                                                      or "no output"))
        return Answers(checked, wrong, example)

    def request(self, url: str) -> bytes:
        """vegeta's request, as Go's HTTP client sends it: its User-Agent, the
        first request's sequence number and gzip accepted (captured:
        tests/test_answers.py)."""
        if self.options is None:
            raise ClientError("Vegeta.prepare must run first")
        host, path = target(url)
        return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: Go-http-client/1.1\r\n"
                "X-Vegeta-Seq: 0\r\nAccept-Encoding: gzip\r\n"
                + ("" if self.options.keepalive else "Connection: close\r\n") + "\r\n").encode()

    def per_second(self, stdout: str) -> list[float]:
        """Responses per second, from the running reports (lab.record.series)."""
        return series.vegeta_per_second(stdout)


CLIENT = Vegeta
