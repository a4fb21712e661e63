"""`make calibrate`: what each installed client can drive on this machine.

Each client loads the ceiling reference (nginx with the lab's config) with
the same pinning as real runs, at a few concurrency levels (default 1 8 64),
with connection close and with keep-alive. The figures go to the cache
(`calibration.json`); every later run records them, and its summary states a
server's rate as a share of what its client drove against the ceiling here.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.measure import hostinfo, topologies
from lab.record import calibration, checked, files, folder, manifest
from lab.record.rows import Row, read_rows
from lab.measure.clients import Options, axes, clients
from lab.analyse.metrics import why_not_calibrated
from lab.setup.fromenv import from_env
from lab.setup.params import SETTINGS, ConfigError, Params, format_cpus, parse_list
from lab.setup import paths
from lab.setup.markdown import Table
from lab.setup.servers import Server
from lab.measure.sweep import ServerSweep, SweepError

DEFAULTS = {"CONCURRENCY": "1 8 64", "DURATION": "5s", "WARMUP": "2s"}


def installed() -> list[str]:
    return [name for name, cls in clients().items() if cls().version() != "not installed"]


def settings(env: dict[str, str], servers: dict[str, Server]) -> tuple[Params, list[str]]:
    """The calibration's parameters (bad input: ConfigError) and the clients to calibrate."""
    from lab.setup import stepcheck
    stepcheck.warn(stepcheck.check_step("calibrate", env))
    ceiling = next((s.name for s in servers.values() if s.role == "ceiling"), None)
    if ceiling is None:
        raise ConfigError("no server with role = \"ceiling\" to calibrate against")
    wanted = env.get("CLIENTS", "").split() or installed()
    unknown = [c for c in wanted if c not in clients()]
    if unknown:
        raise ConfigError(f"CLIENTS: unknown client {' '.join(unknown)}; "
                          f"known: {' '.join(clients())}")
    if not wanted:
        raise ConfigError("no load client is installed: `make bench` installs siege, "
                          "CLIENT=wrk installs wrk")
    merged = {**DEFAULTS, **{k: v for k, v in env.items() if k in DEFAULTS}}
    merged.update(SERVER=ceiling, CLIENT="siege", REPEAT="1", PROBE="0", AXIS="",
                  PORT=env.get("PORT", "8080"), BIND=env.get("BIND", "127.0.0.1"),
                  SERVER_CPUS=env.get("SERVER_CPUS", ""), CLIENT_CPUS=env.get("CLIENT_CPUS", ""),
                  CLIENT_THREADS="")          # siege has none: given below, to the others
    params = from_env(merged, list(servers), axes())
    threads = env.get("CLIENT_THREADS", "").strip()
    if threads:
        params = replace(params, client_threads=SETTINGS["CLIENT_THREADS"].number(threads))
    concurrencies = parse_list("CONCURRENCY", merged["CONCURRENCY"], 1000)
    # Every client is calibrated in closed loop, vegeta too (rate 0: as fast
    # as its workers can): capacity is a concurrency's worth of requests/s.
    return replace(params, axis="concurrency", load_axis="concurrency", concurrencies=concurrencies,
                   values=concurrencies, rates=()), wanted


def run(root: Path, cache: Path, servers: dict[str, Server]) -> int:
    params, wanted = settings(dict(os.environ), servers)
    ceiling = servers[params.servers[0]]
    run_folder = folder.new_run(cache / "calibration", (ceiling.name,))
    out: dict[str, Any] = {
        "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "folder": str(run_folder),
        "ceiling": ceiling.name, "duration_s": params.duration_s, "levels": list(params.concurrencies),
        "pinning": {"server_cpus": format_cpus(params.server_cpus),
                    "client_cpus": format_cpus(params.client_cpus)},
        "topology": topologies.current(params).summary,
        "client_threads": params.client_threads,
        "host": {k: v for k, v in hostinfo.host().items()
                 if k in ("hostname", "cpu_model", "cores", "kernel")},
        "clients": {}}
    busy: dict[str, dict[str, tuple[dict[str, dict[str, Any]], dict[str, str]]]] = {}
    busy_rows: list[Row] = []
    for name in wanted:
        for keepalive in (False, True):
            mode = "keep-alive" if keepalive else "close"
            p = replace(params, client=name, keepalive=keepalive)
            sub = run_folder / f"{name}-{mode}"
            sweep: ServerSweep | None = None
            try:
                sub.mkdir()
                client = clients()[name]()
                conditions = client.prepare(sub, Options(keepalive, p.client_threads))
                manifest.write_manifest(sub, manifest.Manifest(
                    run_id=sub.name,
                    params=manifest.RunParams.parse(checked.obj(
                        p.to_json(), sub / manifest.MANIFEST, "params")),
                    client=manifest.ClientInfo.parse(checked.obj(
                        conditions, sub / manifest.MANIFEST, "client"))))
                files.reserve(sub)          # room for the manifest's last words on a full disk
                print(f"[calibrate] {name}, connection {mode}, against {ceiling.name}",
                      file=sys.stderr, flush=True)
                sweep = ServerSweep(root, cache, sub, ceiling, p, client)
                sweep.run_all()
            except SweepError as e:
                print(f"error: calibration of {name} ({mode}) failed: {e}", file=sys.stderr)
                return 1
            except OSError as e:            # a full LAB_CACHE: which path, and the record says so
                return not_written(cache, sub, sweep, e, f"{name} ({mode})")
            finally:
                files.release(sub)
            got = out["clients"].setdefault(name, {"version": conditions.get("version", ""),
                                                   "refused": {}})
            rows = read_rows(sub)
            busy_rows += rows
            got[mode], got["refused"][mode] = levels_of(rows)
            busy.setdefault(name, {})[mode] = levels_of(rows, busy_ok=True)
            for level, why in got["refused"][mode].items():
                print(f"[calibrate] {name} ({mode}) c={level} not saved: {why}",
                      file=sys.stderr)
    if not any(got[mode] for got in out["clients"].values() for mode in calibration.MODES) and \
            any(saved for modes in busy.values() for saved, _ in modes.values()):
        # nothing measured on a quiet host: save what a busy one gave, marked so
        for name, modes in busy.items():
            for mode, (saved, refused) in modes.items():
                out["clients"][name][mode], out["clients"][name]["refused"][mode] = saved, refused
        out["host_busy"] = True
    cal = calibration.Calibration.parse(checked.obj(out, cache / calibration.FILE, ""))
    print(table(cal))
    if not any(levels for c in cal.clients.values() for levels in c.modes.values()):
        print(f"error: no level was saved (each is listed above with why); "
              f"{cache / calibration.FILE} is left as it was", file=sys.stderr)
        if any(r.has("host-busy") or r.has("steal") for r in busy_rows):
            print(f"the host was busy: {QUIET_MOMENT}", file=sys.stderr)
        return 1
    try:
        files.write_json(cache / calibration.FILE, cal.to_json())
    except OSError as e:
        print(f"error: the calibration could not be saved: {paths.cannot_write(cache, e)}; "
              f"{cache / calibration.FILE} is left as it was (it is written whole or not "
              "at all)", file=sys.stderr)
        return 1
    print(f"saved to {cache / calibration.FILE}; every run whose conditions match (client, connection, "
          "pinning, topology) now uses it", file=sys.stderr)
    if out.get("host_busy"):
        print(QUIET_ADVICE, file=sys.stderr)
    return 0


def not_written(cache: Path, sub: Path, sweep: ServerSweep | None, e: OSError,
                what: str) -> int:
    """A write in LAB_CACHE failed (a full disk) during the calibration of
    `what`: the message names the path, and the calibration's own record (its
    server and the run) says it failed, as a run's does on a full RESULTS;
    the calibration on record is left as it was."""
    said = paths.cannot_write(sub, e)
    try:
        with files.last_words():
            if sweep is not None and sweep.start_record:
                sweep.start_record["status"] = "failed"
                sweep.save(status="failed", error=said)
            if (sub / manifest.MANIFEST).exists():
                manifest.add_problem(sub, f"{what}: {said}", status="incomplete")
    except OSError as again:
        said += f" (and its manifest could not record it: {again.strerror or again})"
    print(f"error: calibration of {what} failed: {said}\n  the calibration on record "
          f"({cache / calibration.FILE}) is left as it was", file=sys.stderr)
    return 1


QUIET_MOMENT = (
    "for a quiet moment, `top -o %CPU` (or `ps -eo pid,pcpu,comm --sort=-pcpu | head`) "
    "names what runs; stop it (browsers, IDE indexers, other benchmarks, `apt` and update "
    "jobs), wait until `uptime`'s 1-minute load is under 0.5, then run `make calibrate` "
    "again (`make workshop-prepare` retries it for you)")
QUIET_ADVICE = (
    "warning: the host was busy during every level (other processes or the hypervisor "
    "took more than the lab allows), so this calibration is saved marked host-busy: each "
    f"report says so, and its capacities are the host's, not the client's; {QUIET_MOMENT}.")


def levels_of(rows: list[Row], busy_ok: bool = False
              ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The levels to save (figures with host-busy and steal) and those refused, with why.
    busy_ok: a level refused only because the host was busy (host-busy, steal) is saved
    too; its host_busy_pct and steal_pct say how busy."""
    saved, refused = {}, {}
    for r in rows:
        why = why_not_calibrated(r)
        if why is not None and busy_ok:
            quiet = " ".join(f for f in r.flags.split() if f not in ("host-busy", "steal"))
            why = why_not_calibrated(replace(r, flags=quiet))
        if why is not None:
            refused[str(r.value)] = why
            continue
        saved[str(r.value)] = {"rate_rps": r.rate_rps, "client_cpu_pct": r.client_cpu_pct,
                               "client_bound": r.client_bound, "failed": r.failed,
                               "server_cpu_pct": r.server_cpu_pct,
                               "host_busy_pct": r.other_cpu_pct, "steal_pct": r.steal_pct}
    return saved, refused


def table(cal: calibration.Calibration) -> str:
    """Markdown: each client's req/s against the ceiling, per mode and level;
    a level not saved says why."""
    levels = cal.levels
    busy = " - HOST BUSY: saved marked so" if cal.extra.get("host_busy") else ""
    lines = [f"Client capacity against {cal.ceiling} ({cal.duration_s}s per level, "
             f"server CPU {cal.pinning.server_cpus}, client CPU {cal.pinning.client_cpus}, "
             f"{cal.topology.split(' ')[0] or '?'}, {cal.host.cpu_model or '?'}){busy}:", ""]
    rows = []
    for name, got in cal.clients.items():
        for mode in calibration.MODES:
            cells = []
            have, refused = got.modes.get(mode, {}), got.refused.get(mode, {})
            for c in levels:
                x = have.get(c)
                cells.append(f"{x.rate_rps:,.0f} req/s (client CPU {x.client_cpu_pct:.0f}%, "
                             f"host busy {x.host_busy_pct or 0:.0f}%, steal "
                             f"{x.steal_pct or 0:.0f}%)" if x is not None else
                             f"– (not saved: {refused[c]})" if c in refused else "–")
            rows.append([f"{name} {got.version}", mode, *cells])
    return "\n".join(lines + Table(["client", "connection", *(f"c={c}" for c in levels)],
                                   rows).lines())
