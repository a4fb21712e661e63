"""Every test's kind, from one table: what `make test` runs first, and what
`make test-fast` runs alone. conftest.py marks each test with it (pytest -m)
and runs the kinds in ORDER; a test file missing here stops the collection.

- unit: constructed inputs, saved runs, captured outputs, small local
  processes; no server under load (make test-fast: `pytest -m unit`);
- fault: the lab run as a user runs it (run-benchmark.sh, make, lab steps)
  against the doubles of tests/servers and the nginx ceiling, faults injected;
- real-server: the repository's Ada and Java servers, built once a session
  (conftest's `built`) and run.

root, docker and ssh say what a test needs beyond its kind (it skips, saying
so, where it cannot have it): `pytest -m "not docker"` leaves those out."""
from __future__ import annotations

ORDER = ("unit", "fault", "real-server")

MARKERS = {
    "unit": "constructed inputs and saved runs, no server under load (make test-fast)",
    "fault": "the lab run as a user runs it against the test doubles and nginx",
    "real-server": "the repository's Ada and Java servers, built once a session, run",
    "root": "needs root (namespaces, mounts, another user, packages installed)",
    "docker": "needs a Docker engine (RUNTIME=docker)",
    "ssh": "runs against emulated ssh hosts (namespaces with their own sshd; root)",
}

# file -> its kind; "file::test" (the function's name, parameters left out)
# for a test whose kind differs from its file's.
FILES = {
    "test_ada_labenv.py": "unit",
    "test_ada_mini.py": "real-server",
    "test_ada_pinned.py": "real-server",
    "test_ada_sources.py": "unit",
    "test_analysis.py": "unit",
    "test_bmf.py": "unit",
    "test_build_log.py": "unit",
    "test_charts.py": "unit",
    "test_checklist.py": "unit",
    "test_ci.py": "unit",
    "test_claimruns.py": "unit",
    "test_claims.py": "unit",
    "test_compare.py": "unit",
    "test_cost.py": "unit",
    "test_cpu_verdict.py": "unit",
    "test_decide.py": "unit",
    "test_deps.py": "unit",
    "test_docs.py": "unit",
    "test_e2e.py": "real-server",
    "test_exits.py": "unit",
    "test_extending.py": "fault",
    "test_failures.py": "unit",
    "test_faults.py": "fault",
    "test_figures.py": "unit",
    "test_findings.py": "unit",
    "test_gate.py": "unit",
    "test_hang.py": "unit",
    "test_hardening.py": "fault",
    "test_history.py": "unit",
    "test_hostile.py": "unit",
    "test_html.py": "unit",
    "test_integrity.py": "unit",
    "test_jit.py": "unit",
    "test_junit.py": "unit",
    "test_kinds.py": "unit",
    "test_layers.py": "unit",
    "test_lifetime.py": "fault",
    "test_listen.py": "unit",
    "test_logcap.py": "fault",
    "test_memsplit.py": "unit",
    "test_metrics.py": "unit",
    "test_nextstarts.py": "unit",
    "test_noise.py": "unit",
    "test_pages.py": "unit",
    "test_params.py": "unit",
    "test_pre_layout_run.py": "unit",
    "test_probe.py": "unit",
    "test_probe_outcome.py": "unit",
    "test_problems.py": "fault",
    "test_procfs.py": "unit",
    "test_profile_tool.py": "unit",
    "test_record.py": "unit",
    "test_repeat.py": "fault",
    "test_reproduce.py": "unit",
    "test_results.py": "unit",
    "test_results_schema.py": "unit",
    "test_sends.py": "unit",
    "test_series.py": "unit",
    "test_servers.py": "unit",
    "test_settings.py": "unit",
    "test_siege.py": "unit",
    "test_stepcheck.py": "unit",
    "test_sweep.py": "fault",
    "test_topology_docker.py": "unit",
    "test_topology_netns.py": "unit",
    "test_topology_ssh.py": "unit",
    "test_use_live.py": "unit",
    "test_variants.py": "unit",
    "test_vegeta.py": "unit",
    "test_verify.py": "unit",
    "test_workshop.py": "real-server",
    "test_wrk.py": "unit",
}

TESTS = {
    # units in files of another kind
    "test_workshop.py::test_the_workshop_has_its_nine_exercises": "unit",
    "test_workshop.py::test_workshop_prepare_readies_what_the_text_uses": "unit",
    # faults: run-benchmark.sh or a lab step on the doubles and nginx
    "test_ci.py::test_the_ci_commands_pass_the_same_code_and_fail_a_slowed_variant": "fault",
    "test_compare.py::test_two_real_runs_of_paced_show_no_large_change": "fault",
    "test_exits.py::test_make_bench_interrupted_in_its_step_ends_with_130": "fault",
    "test_integrity.py::test_siege_giving_up_is_caught_live": "fault",
    "test_integrity.py::test_a_body_changed_mid_run_is_caught_live": "fault",
    "test_results_schema.py::test_the_schema_describes_every_key_the_analysis_writes": "fault",
    "test_sends.py::test_a_run_records_and_shows_what_each_server_sends": "fault",
    "test_series.py::test_a_short_run_stores_each_level_and_charts_it": "fault",
    "test_series.py::test_a_vegeta_run_stores_its_responses_per_second": "fault",
    "test_stepcheck.py::test_rerun_of_a_real_cost_run_is_a_cost_run": "fault",
    "test_topology_netns.py::test_a_short_sweep_of_nginx_across_the_link": "fault",
    "test_topology_netns.py::test_interrupted_mid_sweep_leaves_nothing": "fault",
    "test_topology_ssh.py::test_ctrl_c_stops_everything_on_every_host": "fault",
    "test_topology_ssh.py::test_server_crash_on_the_server_host": "fault",
    "test_topology_ssh.py::test_a_killed_steps_server_is_stopped_by_its_keeper": "fault",
    # the repository's servers
    "test_claimruns.py::test_two_tiny_real_parts_are_judged_together": "real-server",
    "test_cost.py::test_a_jvm_gets_not_applicable_with_the_reason": "real-server",
    "test_cost.py::test_two_cost_runs_agree_within_half_a_percent": "real-server",
    "test_cost.py::test_profile_names_native_functions_and_the_jvm_handler_class":
        "real-server",
    "test_faults.py::test_workers_as_shipped_are_recorded_per_server": "real-server",
    "test_jit.py::test_auto_warmup_of_a_jvm_records_its_jit_and_nginx_is_unaffected":
        "real-server",
    "test_listen.py::test_server_listens_on_bind_with_backlog": "real-server",
    "test_noise.py::test_make_noise_on_ada_mini_records_a_floor_that_compare_names":
        "real-server",
    "test_probe.py::test_nginx_survives_and_rejects_bad_requests": "real-server",
    "test_probe.py::test_undertow_survives": "real-server",
    "test_probe.py::test_aws_findings": "real-server",
    "test_probe.py::test_ada_mini_probe": "real-server",
    "test_reproduce.py::test_quick_smoke_run_of_ada_vs_java": "real-server",
    "test_topology_docker.py::test_aws_and_undertow_through_compose": "real-server",
    "test_topology_docker.py::test_a_container_that_dies_mid_sweep_leaves_nothing":
        "real-server",
    "test_topology_docker.py::test_ctrl_c_mid_sweep_removes_the_container": "real-server",
    "test_topology_docker.py::test_compose_reads_compose_yaml_as_the_lab_does": "real-server",
}

# What a file, or one of its tests, needs beyond its kind.
NEEDS = {
    "test_topology_docker.py": ("docker",),
    "test_topology_netns.py": ("root",),
    "test_topology_ssh.py": ("root", "ssh"),
    "test_lifetime.py": ("root",),
    "test_deps.py": ("root",),
    "test_hardening.py": ("root",),
}


def kind_of(file: str, test: str) -> str:
    return TESTS.get(f"{file}::{test}", FILES[file])


def marks_of(file: str, test: str) -> list[str]:
    """The marker names of a test: its kind, then what it needs."""
    return [kind_of(file, test), *NEEDS.get(f"{file}::{test}", NEEDS.get(file, ()))]
