"""The HTML report (lab/present/reportpage.py) on saved real runs (tests/fixtures/runs):
content, flags next to their figures, no external URL, the index of runs,
and the page as a real headless browser renders it."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from html import escape, unescape
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import ROOT
from lab.analyse import analysis, metrics, wording
from lab.present import comparepage, indexpage, reportpage, svg
from lab.present.page import CSS
from lab.record import folder

pytestmark = pytest.mark.unit

FIXTURES = ROOT / "tests" / "fixtures" / "runs"
COMPLETE = "20261123-033407-nginx+paced"
INCOMPLETE = "20261123-033030-nginx+stall"
FLAGGED = "20261123-033230-warming+nginx+flaky"
RUNS = (COMPLETE, INCOMPLETE, FLAGGED)
# Namespace names inside inline SVG: identifiers, never fetched.
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
# Flags no saved run has, and why: there is no real data to render them from.
NO_REAL_DATA = {
    "steal": "the hypervisor's steal cannot be provoked from inside the VM",
    "saturated": "needs an open-loop client (CLIENT=vegeta), not installed here",
    # made live by tests/test_integrity.py, which checks the report's legend
    "client-stopped": "no saved fixture run has a client that gave up (test_integrity makes one)",
    "answer-changed": "no saved fixture run has a server that changed its answer "
                      "(test_integrity makes one)",
    "out-of-ports": "no saved fixture run ran its client's host out of local ports "
                    "(test_metrics flags a level whose client said so)",
    "client-stalled": "no saved fixture run has a client stopped mid-level "
                      "(test_integrity makes one)",
    "sampler-gap": "no saved fixture run has the lab stopped mid-level (test_integrity "
                   "makes one)",
    "wrong-answers": "no saved fixture run has a server wrong under load "
                     "(test_answers makes one)",
    "port-shared": "no saved fixture run shared its port with another process "
                   "(test_escapes makes one)",
    "accept-queue-full": "no saved fixture run has a server that stopped accepting "
                         "(test_acceptq makes one)",
    "neighbour": "no saved fixture run ran beside the lab's noisy neighbour "
                 "(test_neighbour makes one)",
}


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture runs copied to a fresh results folder, each with its report."""
    top = tmp_path_factory.mktemp("results")
    folder.mark(top)
    for name in RUNS:
        shutil.copytree(FIXTURES / name, top / name)
        reportpage.write_report(top / name)
    indexpage.write_index(top)
    return top


def stats_of(run: Path) -> dict[str, list[metrics.LevelStats]]:
    return analysis.of(run)[1].stats


def page(results_dir: Path, name: str) -> str:
    return (results_dir / name / "report.html").read_text()


def section(text: str, server: str) -> str:
    start = text.index(f'<section class="server" id="server-{server}">')
    return text[start:text.index("</section>", start)]


def cells(text: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", text, re.S)


def flagged_cell(text: str, figure: str, flag: str) -> bool:
    """Some cell holds the figure, the flag's badge and its meaning."""
    meaning = escape(reportpage.MEANINGS[flag])
    return any(figure in c and f'data-flag="{flag}"' in c and meaning in c
               for c in cells(text))


def figure_of(s: metrics.LevelStats, flag: str) -> str:
    concerns = reportpage.FLAG_FIGURE.get(flag, "rate")
    if concerns == "latency":
        return escape(wording.median_range(s.resp_ms, fmt=".2f"))
    if concerns == "failed":
        return str(s.failed)
    return escape(wording.median_range(s.rate))


def test_every_flag_in_the_data_sits_next_to_its_figure(results_dir: Path) -> None:
    for name in RUNS:
        text = page(results_dir, name)
        for server, levels in stats_of(results_dir / name).items():
            part = section(text, server)
            for s in levels:
                for flag in s.all_flags():
                    assert flagged_cell(part, figure_of(s, flag), flag), (name, server,
                                                                          s.value, flag)


@pytest.mark.parametrize("flag", list(reportpage.MEANINGS))
def test_each_flag_occurs_in_a_saved_run_with_its_meaning(results_dir: Path, flag: str) -> None:
    if flag in NO_REAL_DATA:
        pytest.skip(f"no real run has {flag}: {NO_REAL_DATA[flag]}")
    texts = [page(results_dir, n) for n in RUNS]
    found = [t for t in texts if f'data-flag="{flag}"' in t]
    assert found, f"no saved run shows {flag}"
    for t in found:
        legend = t[t.index('<dl class="legend">'):t.index("</dl>")]
        assert f'data-flag="{flag}"' in legend and escape(reportpage.MEANINGS[flag]) in legend


def test_report_figures_per_server(results_dir: Path) -> None:
    text = page(results_dir, COMPLETE)
    m = json.loads((results_dir / COMPLETE / "manifest.json").read_text())
    for server, levels in stats_of(results_dir / COMPLETE).items():
        part = section(text, server)
        top = metrics.peak(levels)
        assert f"{escape(wording.median_range(top.rate))} at c={top.value}" in part
        for s in levels:
            assert escape(wording.median_range(s.rate)) in part
            assert escape(wording.median_range(s.cpu_us_per_req)) in part
        assert escape(wording.median_range(levels[-1].rss_end_kb, 1024, ".1f")) in part
        rec = m["servers"][server]
        assert f"framework: <b>{escape(rec['framework'])}</b>" in part
        assert f"version: <b>{escape(rec['version'])}</b>" in part
        for k, v in rec.get("facts", {}).items():
            assert f"{escape(k)}: <b>{escape(str(v))}</b>" in part
    assert '<div class="status complete">' in text and "status incomplete" not in text


def test_incomplete_run_says_so_first(results_dir: Path) -> None:
    text = page(results_dir, INCOMPLETE)
    m = json.loads((results_dir / INCOMPLETE / "manifest.json").read_text())
    banner = text.index('class="status incomplete"')
    assert banner < text.index("<h2>")                     # before anything else
    assert "INCOMPLETE" in text[banner:banner + 200]
    for problem in m["problems"]:
        assert escape(problem) in text[banner:text.index("</div>", banner)]
    assert 'data-flag="incomplete"' in section(text, "stall")


def test_verdicts_calibration_warmup_and_warnings(results_dir: Path) -> None:
    flagged = page(results_dir, FLAGGED)
    verdicts = [v.__dict__ for v in analysis.of(results_dir / FLAGGED)[1].verdicts]
    assert verdicts
    table = flagged[flagged.index('<table class="verdicts">'):]
    table = table[:table.index("</table>")]
    for v in verdicts:
        row = [escape(str(v[k])) for k in ("value", "a", "b", "kind", "text")]
        assert any(all(x in r for x in row) for r in table.split("<tr>")), v
    warm = section(flagged, "warming")
    assert "<h3>Warm-up</h3>" in warm and ">auto<" in warm and "not steady within the" in warm
    complete = page(results_dir, COMPLETE)
    rec, a = analysis.of(results_dir / COMPLETE)
    assert rec.manifest.calibration
    # made by the landed tree, the calibration records no topology: not used, and why
    assert not a.calibration_used and "does not record its topology" in a.calibration_note
    assert "Not used for this run: " + escape(a.calibration_note) in complete
    for w in a.warnings:
        assert escape(w.text()) in complete
    assert "<h2>Against the client" not in page(results_dir, INCOMPLETE)


def test_conditions_and_reproduce(results_dir: Path) -> None:
    for name in RUNS:
        text = page(results_dir, name)
        m = json.loads((results_dir / name / "manifest.json").read_text())
        conditions = text[text.index("<h2>Conditions</h2>"):]
        h = m["host"]
        for value in (h["cpu_model"], h["kernel"], h["os"], h["cores"], h["memory_gb"],
                      m["topology"], m["pinning"]["server_cpus"], m["client"]["version"],
                      m["client"]["connection"], m["lab"]["commit"]):
            assert f">{escape(str(value))}" in conditions, value
        for k, v in [*h["sysctl"].items(), *m["tools"].items()]:
            assert escape(k) in conditions and escape(v) in conditions
        for k, v in m["settings"].items():
            assert f"<th>{escape(k)}</th><td>{escape(v) if v else '(empty)'}</td>" in conditions
        repro = re.search(r'<pre id="reproduce"><code>(.*?)</code></pre>', text, re.S)
        assert repro and unescape(repro.group(1)) == m["reproduce"]


def test_no_external_url(results_dir: Path) -> None:
    for name in RUNS:
        text = page(results_dir, name)
        assert set(re.findall(r"https?://[^\s\"'<>)]+", text)) <= NAMESPACES, name
        links = re.findall(r"""\b(?:src|href)\s*=\s*["']([^"']*)""", text, re.I)
        assert links and all(x.startswith("#") for x in links), name
        assert "<script" not in text.lower() and "@import" not in text
        assert all(u.startswith("#") for u in re.findall(r"url\(\s*([^)]*)\)", text))
        assert text.count("<svg") == len(list((results_dir / name).glob("*.svg")))
        ids = re.findall(r"""\bid=["']([^"']+)""", text)
        assert len(ids) == len(set(ids)), "ids repeat across charts"


def test_svg_is_made_safe_and_scalable() -> None:
    raw = ('<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg width="600" height="400" '
           'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
           'onload="init(evt)"><script xlink:href="/usr/share/gnuplot/js/gnuplot_svg.js"/>'
           '<script type="text/javascript"><![CDATA[ alert(1) ]]></script>'
           "<defs><path id='gpPt1' d='M0,0'/></defs><use xlink:href='#gpPt1'/>"
           '<a xlink:href="https://example.org/"><text>x</text></a>'
           '<image href="http://example.org/i.png"/><g clip-path="url(#clip1)"/></svg>')
    out = svg.inline_svg("rps", raw)
    assert out.startswith("<svg") and "<?xml" not in out and "DOCTYPE" not in out
    assert "script" not in out and "onload" not in out and "example.org" not in out
    assert "xmlns" not in out and "http://" not in out
    assert "id='rps-gpPt1'" in out and "xlink:href='#rps-gpPt1'" in out
    assert "url(#rps-clip1)" in out
    assert 'viewBox="0 0 600 400"' in out and 'class="chart"' in out
    assert 'width="600"' not in out


def test_probe_rendered_when_present_and_escaped(tmp_path: Path) -> None:
    run = tmp_path / COMPLETE
    shutil.copytree(FIXTURES / COMPLETE, run)
    (run / "paced" ).mkdir()
    (run / "paced" / "probe.json").write_text(json.dumps({"server": "paced", "results": [
        {"probe": "slowloris", "ran": True, "outcome": "survived", "cpu_s": 0.12,
         "answers_after": True},
        {"probe": "<huge header>", "ran": True, "outcome": "refused", "facts": {"code": 431}}]}))
    m = json.loads((run / "manifest.json").read_text())
    m["servers"]["paced"]["summary"] = "<script>alert('x')</script>"
    (run / "manifest.json").write_text(json.dumps(m))
    text = reportpage.write_report(run).read_text()
    part = section(text, "paced")
    assert "<h3>Robustness probe</h3>" in part
    # worded headers and rounded values, no internals' names or Python words
    for head in ("probe", "outcome", "answers GET /api after", "server CPU"):
        assert f"<th>{head}</th>" in part
    assert "<th>cpu_s</th>" not in part and "<th>answers_after</th>" not in part
    assert "0.12 s" in part and "<td>yes</td>" in part
    assert "True" not in part and "None" not in part
    assert "slowloris" in part and "&lt;huge header&gt;" in part and "431" in part
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "Robustness probe" not in section(text, "nginx")


def test_index_lists_runs_newest_first_with_working_links(results_dir: Path,
                                                           tmp_path: Path) -> None:
    top = tmp_path / "results"
    shutil.copytree(results_dir, top)
    (top / "index.html").unlink()
    (top / "not-a-run").mkdir()
    (top / "not-a-run" / "notes.txt").write_text("x")
    bare = top / "20261124-000000-nginx"
    shutil.copytree(FIXTURES / COMPLETE, bare)                 # a run without its report
    m = json.loads((bare / "manifest.json").read_text())
    m["started"] = "2026-11-24T00:00:00+0000"
    (bare / "manifest.json").write_text(json.dumps(m))
    index = indexpage.write_index(top)
    assert index == top / "index.html"
    text = index.read_text()
    rows = re.findall(r"<tr>(.*?)</tr>", text.split("<tbody>")[1], re.S)
    assert len(rows) == 4 and "not-a-run" not in text
    order = [re.search(r"\d{8}-\d{6}-[\w+]+", r).group(0) for r in rows]  # type: ignore[union-attr]
    assert order == sorted(order, reverse=True)
    assert "no report" in rows[0] and 'href="' not in rows[0]
    links = re.findall(r'href="([^"]+)"', text.split("<tbody>")[1].split("</tbody>")[0])
    assert len(links) == 3
    for link in links:
        assert not link.startswith(("/", "http")) and (top / unquote(unescape(link))).is_file()
    for link in re.findall(r'href="([^"]+)"', text):      # the history's links too
        assert not link.startswith(("/", "http")) and (top / unquote(unescape(link))).exists()
    assert "INCOMPLETE".lower() in rows[order.index(INCOMPLETE)].lower()
    for r in rows:
        assert "siege 4.0.7" in r and "close" in r and "loopback" in r


def test_main_report_writes_both_and_prints_paths(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / COMPLETE
    shutil.copytree(FIXTURES / COMPLETE, run)
    folder.mark(tmp_path)
    assert reportpage.main_report(run) == 0
    out = capsys.readouterr().out.split()
    assert out == [str(run / "report.html"), str(tmp_path / "index.html")]
    assert reportpage.main_report(tmp_path / "nothing") == 2


# --- in a real headless browser ---------------------------------------------------

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                  "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1200,3000",
                  "--enable-logging=stderr", "--v=0"]
# Only in the test's copy of the page: writes each chart's and table's size
# into the DOM, which --dump-dom then prints.
MEASURE = """<script>
const boxes = [...document.querySelectorAll('svg.chart, table')].map(el => {
  const r = el.getBoundingClientRect();
  return {tag: el.tagName.toLowerCase(), cls: el.getAttribute('class') || '',
          w: r.width, h: r.height};
});
const out = document.createElement('pre');
out.id = 'lab-sizes';
out.textContent = JSON.stringify(boxes);
document.body.appendChild(out);
</script>"""


def page_requests(netlog: Path) -> list[str]:
    """URLs other than file: the page itself asked for (the browser's own
    background requests carry no file:// isolation key)."""
    data = json.loads(netlog.read_text())
    start = data["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [ev["params"]["url"] for ev in data["events"]
            if ev["type"] == start and "file://" in ev["params"].get("network_isolation_key", "")
            and not ev["params"]["url"].startswith(("file:", "data:"))]


def browse(browser: str, target: Path, work: Path, *extra: str
           ) -> subprocess.CompletedProcess[str]:
    profile = Path(tempfile.mkdtemp(prefix="profile-", dir=work))
    return subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra,
                           target.as_uri()], capture_output=True, text=True, timeout=120)


@pytest.mark.fault                      # chromium: installed where missing (conftest)
@pytest.mark.parametrize("name", [FLAGGED, INCOMPLETE])
def test_report_renders_in_headless_chromium(results_dir: Path, tmp_path: Path,
                                             name: str, chromium: str) -> None:
    browser = chromium
    text = page(results_dir, name)
    copy = tmp_path / "report-measured.html"
    copy.write_text(text.replace("</body>", MEASURE + "</body>"))
    netlog = tmp_path / "net.json"
    t0 = time.monotonic()
    out = browse(browser, copy, tmp_path, "--dump-dom", f"--log-net-log={netlog}")
    took = time.monotonic() - t0
    assert out.returncode == 0, out.stderr[-2000:]
    console = [line for line in out.stderr.splitlines()
               if "CONSOLE" in line or "Uncaught" in line]
    assert console == [], console
    sizes = re.search(r'<pre id="lab-sizes">(.*?)</pre>', out.stdout, re.S)
    assert sizes, "the page did not render (no sizes in the DOM)"
    boxes = json.loads(unescape(sizes.group(1)))
    charts = [b for b in boxes if b["tag"] == "svg"]
    tables = [b for b in boxes if b["tag"] == "table"]
    assert len(charts) == text.count('class="chart"') == len(
        list((results_dir / name).glob("*.svg")))
    assert len(tables) == text.count("<table")
    assert all(b["w"] > 100 and b["h"] > 50 for b in charts), charts
    assert all(b["w"] > 0 and b["h"] > 0 for b in tables), tables
    assert all(b["w"] <= 1200 for b in charts), "a chart is wider than the window"
    assert page_requests(netlog) == []
    assert took < 60


@pytest.mark.fault
def test_screenshot_of_a_report(results_dir: Path, tmp_path: Path, chromium: str) -> None:
    browser = chromium
    shot = tmp_path / "report.png"
    out = browse(browser, results_dir / FLAGGED / "report.html", tmp_path,
                 f"--screenshot={shot}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


# --- the compare page: the same builder, the same hardened inliner -----------------

@pytest.fixture(scope="module")
def compare_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lab.present import compare
    top = tmp_path_factory.mktemp("compare")
    a, b = top / "a", top / "b"
    shutil.copytree(FIXTURES / COMPLETE, a)
    shutil.copytree(FIXTURES / COMPLETE, b)
    # every level of the saved run has a host-busy repetition: the gate compares
    # nothing cleanly (exit 3), the page is made all the same
    assert compare.main(a, b, False, top) == 3
    [folder] = [p for p in top.iterdir() if p.name.startswith("compare-")]
    return folder / "compare.html"


def test_compare_page_is_built_by_html_with_a_hardened_chart(compare_page: Path,
                                                             tmp_path: Path) -> None:
    text = compare_page.read_text()
    assert f"<style>{CSS}</style>" in text                 # the one page builder
    assert text.count('<svg class="chart"') == 1 and "<?xml" not in text
    hostile = tmp_path / "compare.svg"
    hostile.write_text('<svg width="10" height="10" onload="alert(1)"><script>alert(2)</script>'
                       '<a href="https://example.org/"><text>x</text></a></svg>')
    page_ = comparepage.render(comparepage.ComparePage(
        ids=("a", "b"), conditions=("x", "y"), lead="", warnings=[], level="c",
        rows=[comparepage.RateRow("s", 1, "", "", "", "")], others=[], note="",
        chart=hostile, chart_problem=None, differences=[]))
    assert "alert" not in page_ and "onload" not in page_ and "example.org" not in page_


@pytest.mark.fault
def test_compare_page_renders_in_headless_chromium(compare_page: Path, tmp_path: Path,
                                                   chromium: str) -> None:
    browser = chromium
    text = compare_page.read_text()
    copy = tmp_path / "compare-measured.html"
    copy.write_text(text.replace("</body>", MEASURE + "</body>"))
    netlog = tmp_path / "net.json"
    out = browse(browser, copy, tmp_path, "--dump-dom", f"--log-net-log={netlog}")
    assert out.returncode == 0, out.stderr[-2000:]
    console = [line for line in out.stderr.splitlines()
               if "CONSOLE" in line or "Uncaught" in line]
    assert console == [], console
    sizes = re.search(r'<pre id="lab-sizes">(.*?)</pre>', out.stdout, re.S)
    assert sizes, "the page did not render (no sizes in the DOM)"
    boxes = json.loads(unescape(sizes.group(1)))
    charts = [b for b in boxes if b["tag"] == "svg"]
    tables = [b for b in boxes if b["tag"] == "table"]
    assert len(charts) == 1 and len(tables) == text.count("<table") >= 2
    assert all(b["w"] > 100 and b["h"] > 50 for b in charts), charts
    assert all(b["w"] <= 1200 for b in charts), "the chart is wider than the window"
    assert page_requests(netlog) == []
