"""Emulated hosts reachable over OpenSSH, for the tests of TOPOLOGY ssh and by hand.

Each host is a network namespace running an OpenSSH server of its own
(Debian's openssh-server, started by hand: its own config, host key and
authorized_keys in a folder of this module's), listening only on the
namespace's address. The hosts and this one are plugged into a switch: a
bridge in a namespace of its own, whose firewall is empty, so that the hosts
reach each other and this host reaches them without routing or forwarding on
this host. An ssh config file in the same folder makes each one reachable as
`root@<alias>` with a key made for it, without touching ~/.ssh:

    python3 -m tests.sshhost up [--hosts 2] [--tag lab]   # prints the settings to use
    make bench SERVER=jersey SSH_CONFIG=<printed> SERVER_HOST=root@sshhlab-a
    python3 -m tests.sshhost down [--tag lab]

The namespaces share this machine's file system, CPUs and process table:
they emulate separate hosts on a LAN (their own addresses, TCP stacks and
sshd), not separate machines. Root only (ip netns). Names start with `sshh`
and the tag; addresses are 10.202.N.0/24, N the first free one.

Besides `<tag>-a`, `<tag>-b` ... the config has `<tag>-a-bare` (the same
host, logged in with a second key whose sessions get PATH=/nonexistent: a
host lacking every tool) and `<tag>-a-closed` (a port nothing listens on:
an unreachable host).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

SSHD = "/usr/sbin/sshd"
SUBNETS = "10.202.{}.0/24"
PACKAGES = {"sshd": "openssh-server", "ssh": "openssh-client", "rsync": "rsync"}


def ip(*args: str, ns: str | None = None) -> None:
    argv = ["ip", *(["netns", "exec", ns, "ip"] if ns else []), *args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {out.stderr.strip()}")


def ensure_packages() -> None:
    """openssh-server, openssh-client and rsync, installed the lab's way (root)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from lab.measure import deps
    os.environ["PATH"] = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    if deps.ensure(PACKAGES) != 0:
        raise RuntimeError("openssh-server, openssh-client and rsync are needed: "
                           "apt-get install openssh-server openssh-client rsync")


def free_subnet() -> int:
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True,
                          timeout=30).stdout
    used += subprocess.run(["ip", "-4", "route"], capture_output=True, text=True,
                           timeout=30).stdout
    for n in range(10, 250):
        if f"10.202.{n}." not in used:
            return n
    raise RuntimeError("no free 10.202.N.0/24 subnet here")


@dataclass
class Host:
    alias: str
    ns: str
    address: str
    sshd_pid: int = 0


@dataclass
class Lan:
    """Emulated hosts `<tag>-a`, `<tag>-b` ... and this host (.1) on one switch."""
    folder: Path
    tag: str
    count: int = 2
    subnet: int = 0
    hosts: list[Host] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        return f"sshh{self.tag}"

    @property
    def switch(self) -> str:
        return f"{self.prefix}-sw"

    @property
    def config(self) -> Path:
        return self.folder / "ssh_config"

    @property
    def lab_address(self) -> str:
        return f"10.202.{self.subnet}.1"

    def dest(self, i: int = 0, variant: str = "") -> str:
        return f"root@{self.hosts[i].alias}{variant}"

    def state(self) -> Path:
        return self.folder / "lan.json"

    # ------------------------------------------------------------- up
    def up(self) -> Lan:
        if os.geteuid() != 0:
            raise RuntimeError("emulated ssh hosts need root (ip netns)")
        if len(self.prefix) > 10:
            raise RuntimeError(f"tag {self.tag!r} is too long (interface names)")
        ensure_packages()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        self.subnet = self.subnet or free_subnet()
        letters = string.ascii_lowercase[:self.count]
        self.hosts = [Host(f"{self.prefix}-{x}", f"{self.prefix}-{x}",
                           f"10.202.{self.subnet}.{i + 2}") for i, x in enumerate(letters)]
        self.save()                          # down() can undo a half-made Lan
        self.make_keys()
        ip("netns", "add", self.switch)
        ip("link", "add", "br0", "type", "bridge", ns=self.switch)
        ip("link", "set", "br0", "up", ns=self.switch)
        nf = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
        if nf.exists():                      # the switch filters nothing (its own namespace)
            subprocess.run(["ip", "netns", "exec", self.switch, "sh", "-c",
                            f"echo 0 > {nf}"], capture_output=True, timeout=30)
        self.plug(None, f"{self.lab_address}/24", "l")
        for i, h in enumerate(self.hosts):
            ip("netns", "add", h.ns)
            ip("link", "set", "lo", "up", ns=h.ns)
            self.plug(h.ns, f"{h.address}/24", letters[i])
        for h in self.hosts:
            h.sshd_pid = self.start_sshd(h)
            self.save()
        self.write_ssh_config()
        for h in self.hosts:
            wait_port(h.address, 22)
        return self

    def plug(self, ns: str | None, cidr: str, end: str) -> None:
        """A veth pair: one end in `ns` (None: this host) with `cidr`, the other on the switch."""
        inner, outer = f"{self.prefix}{end}0", f"{self.prefix}{end}1"
        ip("link", "add", inner, "type", "veth", "peer", "name", outer)
        ip("link", "set", outer, "netns", self.switch)
        ip("link", "set", outer, "master", "br0", ns=self.switch)
        ip("link", "set", outer, "up", ns=self.switch)
        if ns is not None:
            ip("link", "set", inner, "netns", ns)
        ip("addr", "add", cidr, "dev", inner, ns=ns)
        ip("link", "set", inner, "up", ns=ns)

    def make_keys(self) -> None:
        for name in ("client_key", "bare_key", "host_key"):
            path = self.folder / name
            if not path.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                                f"{self.prefix} {name}", "-f", str(path)], check=True,
                               timeout=60)
        client = (self.folder / "client_key.pub").read_text().strip()
        bare = (self.folder / "bare_key.pub").read_text().strip()
        (self.folder / "authorized_keys").write_text(
            f"{client}\nenvironment=\"PATH=/nonexistent\" {bare}\n")
        hostkey = (self.folder / "host_key.pub").read_text().split()[:2]
        (self.folder / "known_hosts").write_text("".join(
            f"{h.address} {' '.join(hostkey)}\n" for h in self.hosts))

    def start_sshd(self, h: Host) -> int:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)    # sshd's privilege separation
        cfg = self.folder / f"sshd_config-{h.alias}"
        cfg.write_text("\n".join([
            f"ListenAddress {h.address}:22",
            f"HostKey {self.folder / 'host_key'}",
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}",
            "PidFile none",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PermitUserEnvironment PATH",
            "MaxSessions 100",
            "MaxStartups 100:30:200",
            "UseDNS no",
            "X11Forwarding no",
            "LogLevel ERROR",
            "",
        ]))
        log = (self.folder / f"sshd-{h.alias}.log").open("ab")
        proc = subprocess.Popen(["ip", "netns", "exec", h.ns, SSHD, "-D", "-e", "-f", str(cfg)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
        log.close()
        return proc.pid

    def write_ssh_config(self) -> None:
        blocks = []
        for h in self.hosts:
            for variant, keyfile, port in (("", "client_key", 22), ("-bare", "bare_key", 22),
                                           ("-closed", "client_key", 2)):
                blocks.append("\n".join([
                    f"Host {h.alias}{variant}",
                    f"  HostName {h.address}",
                    f"  Port {port}",
                    "  User root",
                    f"  IdentityFile {self.folder / keyfile}",
                    "  IdentitiesOnly yes",
                    f"  UserKnownHostsFile {self.folder / 'known_hosts'}",
                    "  StrictHostKeyChecking yes",
                    "  BatchMode yes",
                    "  LogLevel ERROR",
                    "",
                ]))
        self.config.write_text("\n".join(blocks))

    def save(self) -> None:
        data = asdict(self)
        data["folder"] = str(self.folder)
        self.state().write_text(json.dumps(data, indent=2) + "\n")

    # ------------------------------------------------------------- down
    def leftovers(self) -> list[str]:
        """Processes in the hosts' namespaces besides their sshd listeners."""
        found = []
        for h in self.hosts:
            out = subprocess.run(["ip", "netns", "pids", h.ns], capture_output=True, text=True,
                                 timeout=30).stdout.split()
            for pid in map(int, out):
                if pid == h.sshd_pid or is_listener(pid):
                    continue
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                except OSError:
                    continue
                found.append(f"{h.alias} {pid}: {cmd.decode(errors='replace').strip()}")
        return found

    def down(self) -> None:
        """Stop each sshd (and whatever still runs in the hosts), remove the namespaces."""
        for h in self.hosts:
            pids = subprocess.run(["ip", "netns", "pids", h.ns], capture_output=True,
                                  text=True, timeout=30).stdout.split()
            for pid in {int(p) for p in pids} | ({h.sshd_pid} if h.sshd_pid else set()):
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        time.sleep(0.3)
        for h in self.hosts:
            for pid in subprocess.run(["ip", "netns", "pids", h.ns], capture_output=True,
                                      text=True, timeout=30).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if h.sshd_pid:
                try:
                    os.waitpid(h.sshd_pid, os.WNOHANG)     # our child when made here
                except ChildProcessError:
                    pass
        for ns in [h.ns for h in self.hosts] + [self.switch]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    def __enter__(self) -> Lan:
        try:
            return self.up()
        except BaseException:
            self.down()
            raise

    def __exit__(self, *exc: object) -> None:
        self.down()

    @staticmethod
    def load(folder: Path) -> Lan:
        data = json.loads((folder / "lan.json").read_text())
        hosts = [Host(**h) for h in data.pop("hosts")]
        data["folder"] = Path(data["folder"])
        return Lan(**data, hosts=hosts)


def lan_for(tmp_path_factory: pytest.TempPathFactory, tag: str) -> Iterator[Lan]:
    """Three emulated hosts for a test module's fixture (`tag`: its namespaces'
    prefix, so that two modules' never meet); the module is skipped when not root."""
    import pytest
    if os.geteuid() != 0:
        pytest.skip("emulated ssh hosts need root (ip netns)")
    folder = tmp_path_factory.mktemp("sshhosts")
    with Lan(folder, f"{tag}{os.getpid() % 10000}", count=3) as hosts:
        yield hosts


def is_listener(pid: int) -> bool:
    """sshd's own per-connection processes: `sshd: root@notty` and the like."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return False
    return name.startswith("sshd")


def wait_port(host: str, port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing answers on {host}:{port}") from None
            time.sleep(0.1)


def default_folder(tag: str) -> Path:
    root = Path(__file__).resolve().parents[1]
    cache = Path(os.environ.get("LAB_CACHE") or root / ".cache")
    return cache / f"sshhost-{tag}"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python3 -m tests.sshhost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("up", "down"))
    p.add_argument("--hosts", type=int, default=2, help="how many hosts (up; default 2)")
    p.add_argument("--tag", default="lab", help="names: sshh<tag>-a ... (default lab)")
    p.add_argument("--dir", type=Path, help="its keys, configs and state "
                   "(default: <lab cache>/sshhost-<tag>)")
    args = p.parse_args(argv)
    folder = (args.dir or default_folder(args.tag)).resolve()
    if args.action == "down":
        if not (folder / "lan.json").exists():
            print(f"nothing to take down ({folder / 'lan.json'} does not exist)", file=sys.stderr)
            return 0
        Lan.load(folder).down()
        shutil.rmtree(folder, ignore_errors=True)
        print(f"down: {folder}", file=sys.stderr)
        return 0
    if (folder / "lan.json").exists():
        print(f"error: {folder} is in use; `python3 -m tests.sshhost down --tag {args.tag}` "
              "first", file=sys.stderr)
        return 2
    try:
        lan = Lan(folder, args.tag, args.hosts).__enter__()
    except (RuntimeError, subprocess.SubprocessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"SSH_CONFIG={lan.config}")
    print(f"SERVER_HOST={lan.dest(0)}")
    if len(lan.hosts) > 1:
        print(f"CLIENT_HOST=\"{' '.join(lan.dest(i) for i in range(1, len(lan.hosts)))}\"")
    print("# e.g.: make bench SERVER=jersey SSH_CONFIG=" + str(lan.config)
          + f" SERVER_HOST={lan.dest(0)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
