"""Why a claim is not reproduced or inconclusive, measured from the record.

For each claim that is not reproduced (or inconclusive) on a run, three
explanations are checked, each from what the run recorded, never assumed:

1. the client was the limit: the share of the claim's levels flagged
   client-bound (lab.analyse.metrics, the same flag as a run's verdicts), and what the
   client drives against the ceiling on this host per the calibration on
   record (lab.analyse.analysis.capacity, `make calibrate`);
2. the conditions differ: the study's published conditions (docs/claims.toml
   [study.published_conditions], quoting docs/published.md) against this run's
   manifest, row by row (`run_conditions`; the table: lab.present.claimsmd);
   a claim's reason names the rows that bear on it;
3. the noise: whether the claim's servers' figures (median [min-max] over
   repetitions) overlap.

Pure functions: nothing here runs or writes anything (lab.present.claimsmd
writes what they return as Markdown, for lab.studies.claimruns and
lab.studies.reproduce).
"""
from __future__ import annotations

from collections.abc import Mapping

from lab.analyse import analysis, claimcost, claims, claimsfile
from lab.analyse.claimsfile import Study, start_of
from lab.analyse.claims import ClaimResult
from lab.analyse.metrics import LevelStats, Spread
from lab.record.manifest import Manifest
from lab.setup.servers import ServerSpec

# condition rows, in the order of the table: key of [study.published_conditions], label
ROWS = (("server_host", "server host"), ("client_host", "client host"),
        ("network", "network"), ("os", "OS"), ("jdk_gc", "JDK and GC"),
        ("aws", "AWS version and linking"), ("client", "client version and connection mode"))
# which rows bear on a claim: all of them on a throughput claim; on an RSS claim
# those that change what a process holds resident
RSS_ROWS = ("os", "jdk_gc", "aws")
JAVA = ("jersey",)             # lab servers whose memory the JDK and GC decide


def cpus(text: str) -> int:
    """How many CPUs a CPU list names ("0", "0-1", "0,2-3"); 0 when empty."""
    n = 0
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        n += int(hi) - int(lo) + 1 if hi else 1
    return n


def shares_client_cpu(m: Manifest) -> bool:
    """Server and client pinned to overlapping CPUs (SERVER_CPUS=0-1 here)."""
    def ids(text: str) -> set[int]:
        out: set[int] = set()
        for part in filter(None, text.split(",")):
            lo, _, hi = part.partition("-")
            out |= set(range(int(lo), int(hi or lo) + 1))
        return out
    return bool(ids(m.pinning.server_cpus) & ids(m.pinning.client_cpus))


def java_opts(m: Manifest) -> str:
    """JAVA_OPTS as the run's JVMs got it: the one value the lab reads back,
    Params.java_opts, which the manifest records as params.java_opts (its
    `settings` keep the text as given, for the reproduce line)."""
    return str(m.params.extra.get("java_opts") or "").strip()


def run_conditions(m: Manifest) -> dict[str, str]:
    """This run's side of each condition row, from its manifest."""
    h, t = m.host, m.tools
    n = cpus(m.pinning.server_cpus)
    shared = " (shares the client's CPU)" if shares_client_cpu(m) else ""
    model = h.model()
    topo = (m.topology_details.get("name") or (m.topology or "?").split(" ")[0])
    local = topo in ("local", "?", "") or m.topology_details.get("server_host") in (None, "local")
    client_host = "the same host" + (f", client CPU {m.pinning.client_cpus}"
                                     if m.pinning.client_cpus else "") if local else \
        ", ".join(map(str, m.topology_details.get("client_hosts", []))) or "another host"
    aws = m.servers.get("aws") or next((s for k, s in m.servers.items()
                                        if ServerSpec.parse(k).name == "aws"), None)
    facts = "; ".join(f"{k}={v}" for k, v in (aws.facts or {}).items()
                      if k.startswith("aws_") or "link" in k) if aws else ""
    opts = java_opts(m)
    return {
        "server_host": f"{h.os or '?'}, {model}; server pinned to "
                       f"{n or '?'} CPU{'s' if n != 1 else ''} "
                       f"({m.pinning.server_cpus or '?'}){shared}",
        "client_host": client_host,
        "network": m.topology or "?",
        "os": f"{h.os or '?'}, kernel {h.kernel or '?'}",
        "jdk_gc": jvm(m, opts),
        "aws": (f"AWS {aws.version or 'version not recorded'}"
                + (f" ({facts})" if facts else ", linking not recorded")) if aws
        else "AWS not in this run",
        "client": f"{m.client.tool} {m.client.version or t.get(m.client.tool) or '?'}, "
                  f"connection {m.client.connection or analysis.mode(m.params.keepalive)}",
    }


def jvm(m: Manifest, opts: str) -> str:
    """JDK, collector and heap as the Java server's facts recorded them (the
    JVM chooses its collector from the CPUs it sees), and JAVA_OPTS."""
    java = next((s for k, s in m.servers.items() if ServerSpec.parse(k).family in JAVA
                 and s.facts), None)
    given = f"JAVA_OPTS `{opts}` (a variant)" if opts else "JAVA_OPTS none (the JVM's defaults)"
    if java is None or java.facts is None:
        return f"JDK {m.tools.get('java') or 'not installed'} (no Java server in this run); {given}"
    f = java.facts
    heap = f.get("max_heap_bytes", "")
    heap_text = f", max heap {int(heap) / 2**30:.1f} GiB" if heap.isdigit() else ""
    return (f"JDK {f.get('java_version', '?')}, GC {f.get('gc', '?')} as the JVM chose it on "
            f"{f.get('active_processors', '?')} CPU(s){heap_text}; {given}")


def client_reason(claim: claimsfile.Claim, m: Manifest,
                  stats: Mapping[str, list[LevelStats]]) -> str:
    """(1) the share of the claim's levels that were client-bound, and what the
    client drives here per the calibration."""
    if claim.metric not in claims.THROUGHPUT_METRICS:
        return "the client: not a limit on this claim (RSS is read from the server's /proc)"
    levels = [s for x in claim.servers for s in stats.get(x, [])]
    if not levels:
        return "the client: not measured"
    bound = [s for s in levels if s.client_bound]
    share = "client-bound levels " + ", ".join(
        f"{x} {sum(1 for s in stats.get(x, []) if s.client_bound)} of {len(stats.get(x, []))}"
        for x in claim.servers)
    cal = m.calibration
    top = max(s.value for s in levels)
    at = claim.at or top
    if cal is None:
        drives = "no calibration on record: run `make calibrate` to know what the client drives"
    elif (why := analysis.why_calibration_differs(m, cal)) is not None:
        drives = f"the calibration on record does not apply ({why})"
    else:
        got = analysis.capacity(cal, m.client.tool, m.params.keepalive, at)
        drives = "the calibration has no level for this client and mode" if got is None else \
            (f"{m.client.tool} drives {got[0] / 1000:.1f} k req/s against the ceiling here "
             f"(calibrated at c={got[1]}, connection {analysis.mode(m.params.keepalive)})")
    holds = "holds at every level" if len(bound) == len(levels) else \
        f"holds at {len(bound)} of {len(levels)} levels" if bound else \
        "does not hold (no level client-bound)"
    return f"the client was the limit: {holds}: {share}; {drives}"


def conditions_reason(claim: claimsfile.Claim, study: Study, m: Manifest) -> str:
    """(2) the rows of the conditions table that bear on the claim, in short."""
    mine = run_conditions(m)
    rows = RSS_ROWS if claim.metric == "rss_end" else tuple(k for k, _ in ROWS)
    specs = [claimsfile.spec_of(x) for x in claim.servers]
    if claim.metric == "rss_end" and not any(s.family in JAVA for s in specs):
        rows = tuple(r for r in rows if r != "jdk_gc")
    if claim.metric == "rss_end" and not any(s.name in ("aws", "asf") for s in specs):
        rows = tuple(r for r in rows if r != "aws")
    label = dict(ROWS)
    said = [f"{label[r]}: {study.published_conditions.get(r, 'not stated')} | here {mine[r]}"
            for r in rows]
    return "the conditions differ (see the conditions table): " + "; ".join(said)


def noise_reason(claim: claimsfile.Claim, stats: Mapping[str, list[LevelStats]]) -> str:
    """(3) whether the servers' figures overlap (min-max over repetitions)."""
    figs: list[tuple[str, Spread]] = []
    for x in claim.servers:
        f = claims.figure(claim, stats.get(x, []), x)
        if f is None:
            return f"the noise: {x} not measured"
        figs.append((x, f))
    if len(figs) == 1:
        s = figs[0][1]
        return (f"the noise: one server, range {claims.spread(s)} over {s.n} repetitions"
                + (" (one repetition shows no spread)" if s.n < 2 else ""))
    pairs = []
    overlap = False
    for (a, fa), (b, fb) in zip(figs, figs[1:]):
        o = fa.lo <= fb.hi and fb.lo <= fa.hi
        overlap = overlap or o
        pairs.append(f"{a} {claims.spread(fa)} and {b} {claims.spread(fb)} "
                     f"{'overlap' if o else 'are separated'}")
    few = min(s.n for _, s in figs) < 2
    holds = "holds" if overlap else "does not hold" if not few else \
        "cannot be told (one repetition shows no spread)"
    return f"the noise: {holds}: " + "; ".join(pairs)


def reasons(r: ClaimResult, study: Study, m: Manifest,
            stats: Mapping[str, list[LevelStats]]) -> list[str]:
    """The three explanations of a claim not reproduced or inconclusive;
    none for a reproduced one."""
    if r.verdict == claims.REPRODUCED or not all(stats.get(x) for x in r.claim.servers):
        return []                  # not measured: the verdict's reason says so
    return [client_reason(r.claim, m, stats), conditions_reason(r.claim, study, m),
            noise_reason(r.claim, stats)]


def ssh_command(study: Study, claim: claimsfile.Claim, specs: Mapping[str, ServerSpec]) -> str:
    """The command that runs a throughput claim's servers on two hosts, as the
    study did, with the study's client, mode, levels, duration and repetitions."""
    s = study.setup
    servers = " ".join(dict.fromkeys(str(start_of(specs, x)) for x in claim.servers))
    return (f"make bench SERVER='{servers}' CLIENT={s.client} "
            f"KEEPALIVE={'1' if s.connection == 'keep-alive' else '0'} "
            f"CONCURRENCY='{' '.join(map(str, s.levels))}' DURATION={s.duration_s}s "
            f"REPEAT={s.repetitions} TOPOLOGY=ssh SERVER_HOST=user@server-host "
            f"CLIENT_HOST=user@client-host; then make claims STUDY={study.id} "
            "RUNS=results/<that run>")


def variants(claim: claimsfile.Claim, study: Study, specs: Mapping[str, ServerSpec]) -> list[str]:
    """Variants this lab can run to test the leading explanation of a claim."""
    out = []
    named = {x: claimsfile.spec_of(x) for x in claim.servers}
    bases = {s.name for s in named.values()}
    if claim.metric in claims.THROUGHPUT_METRICS and len(bases) > 1:
        servers = " ".join(dict.fromkeys(str(start_of(specs, x)) for x in claim.servers))
        out.append(f"server CPUs: `make bench SERVER='{servers}' SERVER_CPUS=0` against "
                   f"`SERVER_CPUS=0-1` (the client then shares a CPU, flagged), then "
                   f"`make claims STUDY={study.id} RUNS=...`; this host cannot show the "
                   "study's 8 hardware threads")
        out.append(f"two hosts: `{ssh_command(study, claim, specs)}`")
        if study.cost is not None and claimcost.way(claim) == claimcost.DUET:
            levels = " ".join(map(str, claimcost.levels_of(claim, study.cost.levels)))
            keep = "1" if study.setup.connection == "keep-alive" else "0"
            out.append(f"by cost: `make bench SERVER='{servers}' PAIRED=duet "
                       f"CLIENT={study.cost.client} KEEPALIVE={keep} CONCURRENCY='{levels}' "
                       f"DURATION={study.cost.duration_s}s REPEAT={study.cost.pairs}`, then "
                       f"`make claims STUDY={study.id} RUNS=...` with that run among the "
                       "others")
    java = [x for x, s in named.items() if s.family in JAVA]
    if claim.metric == "rss_end" and java:
        j = start_of(specs, java[0])
        out.append(f"the JDK 8 collector: `make bench SERVER={j} "
                   "JAVA_OPTS='-XX:+UseParallelGC'` (JAVA_OPTS is recorded as a variant; "
                   "add -Xmx to fix the heap), then `make claims`")
    if claim.metric == "rss_end" and bases & {"aws", "asf"}:
        out.append("shared libraries: the memory split (RSS, PSS, private) is shown beside "
                   "the verdict; a statically linked AWS is not built by this lab")
    return out
