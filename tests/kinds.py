"""Every test's kind, from one table: what `make test` runs first, and what
`make test-fast` runs alone. conftest.py marks each test with it (pytest -m)
and runs the kinds in ORDER; a test file missing here stops the collection.

- unit: constructed inputs, saved runs, captured outputs, small local
  processes; no server under load (make test-fast: `pytest -m unit`);
- fault: the lab run as a user runs it (run-benchmark.sh, make, lab steps)
  against the doubles of tests/servers and the nginx ceiling, faults injected;
- real-server: the repository's Ada and Java servers, built once a session
  (conftest's `built`) and run.

root, docker and ssh say what a file's tests need beyond their kind (some of
them, which skip, saying so, where they cannot have it): `pytest -m "not
docker"` leaves those files out. quiet marks the tests of QUIET, which run
alone, after all the others (rank)."""
from __future__ import annotations

ORDER = ("unit", "fault", "real-server")

MARKERS = {
    "unit": "constructed inputs and saved runs, no server under load (make test-fast)",
    "fault": "the lab run as a user runs it against the test doubles and nginx",
    "real-server": "the repository's Ada and Java servers, built once a session, run",
    "root": "needs root (namespaces, mounts, another user, packages installed)",
    "docker": "needs a Docker engine (RUNTIME=docker)",
    "ssh": "runs against emulated ssh hosts (namespaces with their own sshd; root)",
    "quiet": "a test that judges measurements: runs alone, after every other test (QUIET)",
}

# file -> its kind; then, by kind, the tests of a file whose kind differs
# (the function's name, parameters left out). unit: in-process, or a small
# local process (a client run for a second, headless Chromium); a test
# that runs the lab, make or run-benchmark.sh is a fault test.
FILES = {
    "test_ada_labenv.py": "unit",
    "test_ada_mini.py": "real-server",
    "test_ada_pinned.py": "real-server",
    "test_ada_sources.py": "unit",
    "test_analysis.py": "unit",
    "test_answers.py": "fault",
    "test_bmf.py": "unit",
    "test_build_log.py": "unit",
    "test_charts.py": "unit",
    "test_cgroup.py": "unit",
    "test_checklist.py": "fault",
    "test_ci.py": "fault",
    "test_claimruns.py": "fault",
    "test_claims.py": "unit",
    "test_claims_schema.py": "unit",
    "test_compare.py": "unit",
    "test_cost.py": "unit",
    "test_cpu_verdict.py": "unit",
    "test_decide.py": "unit",
    "test_deps.py": "unit",
    "test_docs.py": "unit",
    "test_e2e.py": "real-server",
    "test_escapes.py": "fault",
    "test_exits.py": "fault",
    "test_extending.py": "fault",
    "test_failures.py": "unit",
    "test_fullcache.py": "fault",
    "test_faults.py": "fault",
    "test_figures.py": "unit",
    "test_findings.py": "unit",
    "test_gate.py": "unit",
    "test_hang.py": "unit",
    "test_hardening.py": "fault",
    "test_history.py": "unit",
    "test_hostile.py": "fault",
    "test_html.py": "unit",
    "test_integrity.py": "unit",
    "test_jit.py": "unit",
    "test_junit.py": "unit",
    "test_kinds.py": "unit",
    "test_layers.py": "unit",
    "test_lifetime.py": "fault",
    "test_listen.py": "unit",
    "test_logcap.py": "unit",
    "test_manyruns.py": "unit",
    "test_markdown.py": "unit",
    "test_memsplit.py": "unit",
    "test_metrics.py": "unit",
    "test_nextstarts.py": "unit",
    "test_noise.py": "unit",
    "test_outside_text.py": "unit",
    "test_pages.py": "unit",
    "test_pair.py": "fault",
    "test_paired.py": "unit",
    "test_pairverdict.py": "unit",
    "test_planted.py": "unit",
    "test_params.py": "unit",
    "test_pre_layout_run.py": "unit",
    "test_probe.py": "unit",
    "test_probe_outcome.py": "unit",
    "test_problems.py": "fault",
    "test_procfs.py": "unit",
    "test_profile_tool.py": "unit",
    "test_record.py": "fault",
    "test_repeat.py": "fault",
    "test_reproduce.py": "unit",
    "test_results.py": "unit",
    "test_results_schema.py": "fault",
    "test_scale.py": "fault",
    "test_sends.py": "fault",
    "test_series.py": "unit",
    "test_servers.py": "unit",
    "test_settings.py": "unit",
    "test_siege.py": "unit",
    "test_stepcheck.py": "fault",
    "test_sweep.py": "fault",
    "test_topology_docker.py": "unit",
    "test_topology_netns.py": "fault",
    "test_topology_ssh.py": "fault",
    "test_tree_sampler.py": "unit",
    "test_use_live.py": "unit",
    "test_variants.py": "unit",
    "test_vegeta.py": "unit",
    "test_verify.py": "unit",
    "test_workshop.py": "real-server",
    "test_wrk.py": "unit",
}

OTHER: dict[str, dict[str, tuple[str, ...]]] = {
    "unit": {
        "test_answers.py": (
            "test_each_clients_request_is_the_one_it_sends",
            "test_the_size_check_allows_only_what_the_client_may_count_besides",
            "test_the_check_slice_line_is_read_with_its_example",
        ),
        "test_checklist.py": (
            "test_every_server_in_the_tree_passes",
            "test_a_finding_is_one_line_owned_by_line",
            "test_the_manifest_says_docker_false_or_nothing",
            "test_the_test_doubles_say_what_they_lack",
            "test_the_servers_a_step_is_asked_for",
        ),
        "test_ci.py": (
            "test_both_workflows_run_the_commands_this_test_runs",
            "test_the_workflows_variables_are_settings_of_the_lab_or_their_own",
            "test_the_lab_is_where_the_prose_says_in_both_workflows",
            "test_the_artifacts_and_the_junit_report_are_kept_when_the_gate_fails",
            "test_the_bmf_export_is_documented_as_it_is_made",
        ),
        "test_claimruns.py": (
            "test_one_run_judges_its_claims_with_the_differences_noted",
            "test_another_connection_mode_is_not_judged",
            "test_another_worker_count_is_not_the_study_s_server",
            "test_a_plain_name_with_the_study_s_workers_counts",
            "test_variants_are_noted_shared_cpu_and_java_opts",
            "test_parts_are_joined_when_their_conditions_match",
            "test_parts_are_not_joined_when_their_conditions_differ",
            "test_each_client_is_judged_on_its_own_runs",
            "test_reasons_are_measured_from_the_record",
            "test_the_client_reason_reads_the_calibration_when_it_applies",
            "test_noise_overlap_is_said_when_the_spreads_overlap",
            "test_the_rps_claim_prints_its_two_host_command",
            "test_runs_is_a_make_variable_not_a_misspelt_setting",
            "test_make_reproduce_output_carries_the_reasons",
            "test_a_reproduce_folder_stands_for_its_runs",
            "test_the_jvm_row_reads_the_java_server_s_facts",
            "test_the_last_run_holding_a_claim_is_judged_and_the_others_named",
        ),
        "test_exits.py": (
            "test_docs_table_is_the_generated_one",
            "test_every_lab_step_of_the_makefile_goes_through_step",
        ),
        "test_extending.py": (
            "test_every_client_found_is_complete_and_pairs_with_a_known_client",
        ),
        "test_hostile.py": (
            "test_a_server_name_with_a_nul_or_a_slash_is_refused_when_read",
            "test_the_measuring_side_never_writes_into_a_linked_server_folder",
            "test_a_dangling_results_mark_is_not_written_through",
            "test_files_reader_limits",
            "test_a_bad_noise_floor_is_refused_with_a_message",
            "test_a_full_disk_during_the_report_leaves_it_incomplete",
            "test_finish_on_a_full_disk_is_one_line",
            "test_workers_is_optional_as_the_readme_says",
        ),
        "test_record.py": (
            "test_a_manifest_survives_a_read_modify_write",
            "test_a_newer_schema_is_refused_with_what_to_do",
            "test_case6_rerun_settings_recorded_unless_given",
        ),
        "test_results_schema.py": (
            "test_every_field_of_the_schema_is_described_in_run_folder_md",
        ),
        "test_topology_netns.py": (
            "test_names_fit_and_addresses_never_collide",
            "test_a_bad_prefix_is_refused",
            "test_rates_in_tc_units",
            "test_shaping_is_tbf_for_the_rate_and_netem_for_the_delay",
            "test_the_topology_binds_the_servers_address_only",
            "test_the_plan_names_the_topologys_address_not_bind",
        ),
        "test_topology_ssh.py": (
            "test_cpus_of_another_host_are_not_checked_against_this_one",
            "test_a_level_is_shared_among_client_hosts",
            "test_several_hosts_levels_combine",
            "test_client_bound_applies_per_host",
            "test_paths_and_environment_as_the_remote_host_sees_them",
            "test_control_sockets_fit_the_path_limit",
        ),
        "test_workshop.py": (
            "test_the_workshop_has_its_nine_exercises",
            "test_workshop_prepare_readies_what_the_text_uses",
        ),
    },
    "fault": {
        "test_ada_sources.py": (
            "test_a_bad_archive_exits_2_naming_it_before_anything_is_built",
            "test_an_ada_sources_folder_that_does_not_exist_exits_2",
        ),
        "test_bmf.py": (
            "test_the_command_writes_the_file_and_says_what_it_left_out",
        ),
        "test_build_log.py": (
            "test_a_failed_ada_source_check_shows_only_its_own_output",
            "test_two_builds_in_one_cache_take_turns",
        ),
        "test_compare.py": (
            "test_two_real_runs_of_paced_show_no_large_change",
        ),
        "test_cost.py": (
            "test_cost_bad_input_exits_2_before_anything_starts",
            "test_profile_of_something_not_a_run_exits_2",
        ),
        "test_gate.py": (
            "test_bad_gate_settings_are_exit_2",
            "test_min_effect_reads_percent_or_plain_number",
        ),
        "test_history.py": (
            "test_make_history_prints_the_table",
        ),
        "test_integrity.py": (
            "test_siege_giving_up_is_caught_live",
            "test_a_body_changed_mid_run_is_caught_live",
            "test_a_client_stopped_mid_level_is_caught_live",
            "test_the_lab_stopped_mid_level_is_a_sampler_gap_live",
        ),
        "test_logcap.py": (
            "test_a_server_that_logs_100k_a_request_is_capped_live",
        ),
        "test_noise.py": (
            "test_noise_measures_one_server_else_exit_2_with_nothing_started",
        ),
        "test_planted.py": (
            "test_a_bench_whose_run_folder_is_swapped_mid_run_writes_nothing_there",
            "test_a_link_at_the_runs_lock_is_not_written_through_by_the_script",
        ),
        "test_probe.py": (
            "test_fragile_stops_answering_after_garbage",
            "test_sturdy_survives_every_probe",
        ),
        "test_reproduce.py": (
            "test_bad_input_exits_2_before_anything_runs",
        ),
        "test_results.py": (
            "test_a_bench_run_folder_names_its_client_and_connection",
        ),
        "test_series.py": (
            "test_a_short_run_stores_each_level_and_charts_it",
            "test_a_vegeta_run_stores_its_responses_per_second",
        ),
        "test_settings.py": (
            "test_make_bench_with_a_misspelt_setting_exits_2",
            "test_make_build_says_a_bad_server_once",
            "test_bench_refuses_before_anything_is_built",
            "test_quick_must_be_0_or_1",
            "test_make_help_lists_every_setting",
        ),
        "test_topology_docker.py": (
            "test_bad_docker_settings_exit_2_before_anything_runs",
            "test_a_normal_user_gets_the_steps_and_exit_2",
        ),
        "test_use_live.py": (
            "test_make_use_prints_the_table_and_refuses_a_non_run",
            "test_live_follows_the_start_being_measured",
            "test_live_waits_for_a_run_then_says_none_came",
        ),
        "test_workshop.py": (
            "test_each_run_form_the_docs_write_works_in_each_step",
            "test_exercise_3s_verdicts_get_the_starts_their_family_needs",
            "test_the_check_does_not_depend_on_what_the_student_added",
        ),
    },
    "real-server": {
        "test_claimruns.py": (
            "test_two_tiny_real_parts_are_judged_together",
        ),
        "test_cost.py": (
            "test_a_jvm_gets_not_applicable_with_the_reason",
            "test_two_cost_runs_agree_within_half_a_percent",
            "test_profile_names_native_functions_and_the_jvm_handler_class",
        ),
        "test_faults.py": (
            "test_workers_as_shipped_are_recorded_per_server",
        ),
        "test_jit.py": (
            "test_auto_warmup_of_a_jvm_records_its_jit_and_nginx_is_unaffected",
        ),
        "test_lifetime.py": (
            "test_profile_interrupted_or_killed",
            "test_profile_keeps_one_profile_per_level",
            "test_profile_refuses_a_level_an_interrupted_run_never_measured",
            "test_reproduce_interrupted_or_killed",
        ),
        "test_listen.py": (
            "test_server_listens_on_bind_with_backlog",
        ),
        "test_noise.py": (
            "test_make_noise_on_ada_mini_records_a_floor_that_compare_names",
        ),
        "test_probe.py": (
            "test_every_repository_server_is_probed",
            "test_nginx_survives_and_rejects_bad_requests",
            "test_undertow_survives",
            "test_aws_findings",
            "test_ada_mini_probe",
        ),
        "test_topology_docker.py": (
            "test_aws_and_undertow_through_compose",
            "test_a_container_that_dies_mid_sweep_leaves_nothing",
            "test_ctrl_c_mid_sweep_removes_the_container",
            "test_compose_reads_compose_yaml_as_the_lab_does",
            "test_the_client_service_runs_siege_and_wrk",
        ),
        "test_topology_netns.py": (
            "test_a_short_sweep_of_aws_across_the_link",
        ),
        "test_topology_ssh.py": (
            "test_aws_and_jersey_on_the_server_host",
        ),
    },
}
TESTS = {f"{file}::{test}": kind for kind, files in OTHER.items()
         for file, tests in files.items() for test in tests}


# Tests that judge measurements (a gate's verdict, a steady rate, a
# calibration, a noise floor, a claim): on a busy host they skip or accept
# exit 3, so each runs alone (suite.turn: no other test beside it, on either
# pytest-xdist worker), after the servers' background build (suite.Prebuild),
# and after every other test (rank), when nothing else is left to run. The
# other tests check what the lab does, not what it measured, and run beside
# each other.
QUIET = (
    "test_ci.py::test_the_ci_commands_pass_the_same_code_and_fail_a_slowed_variant",
    "test_compare.py::test_two_real_runs_of_paced_show_no_large_change",
    "test_repeat.py::test_repeat_auto_adds_starts_only_while_a_pair_is_undecided",
    "test_repeat.py::test_warmup_auto_waits_until_the_rate_is_steady",
    "test_repeat.py::test_warmup_that_hits_its_cap_flags_every_level",
    "test_repeat.py::test_calibrate_saves_only_levels_where_the_client_was_the_limit",
    "test_repeat.py::test_a_run_states_its_share_of_a_calibration_of_its_conditions",
    "test_faults.py::test_competing_load_is_flagged",
    "test_noise.py::test_make_noise_on_ada_mini_records_a_floor_that_compare_names",
    "test_jit.py::test_auto_warmup_of_a_jvm_records_its_jit_and_nginx_is_unaffected",
    "test_claimruns.py::test_two_tiny_real_parts_are_judged_together",
)


# The files that take longest in their kind, longest first (their tests
# outside QUIET, in a `make test` here on two workers: from 4 minutes for the
# workshop down to 40 s), first in it: the two pytest-xdist workers take files
# in this order (suite.file_scheduler), so the long ones start early and the
# short ones fill in, and neither worker is left alone with a long file while
# the other waits to run the tests of QUIET.
LONG = (
    "test_workshop.py", "test_e2e.py", "test_probe.py", "test_topology_docker.py",
    "test_lifetime.py", "test_escapes.py", "test_faults.py", "test_topology_ssh.py",
    "test_cost.py",
    "test_topology_netns.py", "test_listen.py",
    "test_repeat.py", "test_stepcheck.py", "test_record.py", "test_hostile.py",
)

# Files whose tests go to the workers one by one, not as a whole file: each
# test of the workshop runs an exercise of its own (half a minute each).
SPLIT = ("test_workshop.py",)


def rank(file: str, test: str) -> tuple[bool, int, int]:
    """Where a test goes in the suite's order (conftest sorts the collection
    by it; suite.file_scheduler hands work out by it): the tests of QUIET
    after all the others, then by kind (ORDER), then the LONG files first."""
    return (quiet(file, test), ORDER.index(kind_of(file, test)),
            LONG.index(file) if file in LONG else len(LONG))


# What a file's tests (some of them), or one test, need beyond their kind.
NEEDS = {
    "test_topology_docker.py": ("docker",),
    "test_topology_netns.py": ("root",),
    "test_topology_ssh.py": ("root", "ssh"),
    "test_lifetime.py": ("root",),
    "test_deps.py": ("root",),
    "test_hardening.py": ("root",),
    "test_fullcache.py": ("root",),
}


def split_nodeid(nodeid: str) -> tuple[str, str]:
    """(file name, test function) of a pytest node id, parameters left out."""
    path, _, name = nodeid.partition("::")
    return path.rpartition("/")[2], name.partition("[")[0]


def quiet(file: str, test: str) -> bool:
    """A test of QUIET: it runs alone, after every other test."""
    return f"{file}::{test}" in QUIET


def kind_of(file: str, test: str) -> str:
    return TESTS.get(f"{file}::{test}", FILES[file])


def marks_of(file: str, test: str) -> list[str]:
    """The marker names of a test: its kind, what it needs, then `quiet`
    for the tests of QUIET (`pytest -m quiet` selects them)."""
    return [kind_of(file, test), *NEEDS.get(f"{file}::{test}", NEEDS.get(file, ())),
            *(["quiet"] if quiet(file, test) else [])]
