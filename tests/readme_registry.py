"""Every command README.md and its command pages show (tests/readme_commands.py extracts them: README.md,
docs/getting-started.md, docs/cli.md, docs/benchmarks.md, docs/contributing.md), as written, -> the tests that run it.

tests/unit/test_readme_commands.py fails when a page shows a command missing here, when an entry here is on no page
any more, or when a named test does not exist. Each entry says how the test runs the command: as written, with
which placeholders filled, or — for what needs AWS or takes minutes — in which form instead.
"""

from __future__ import annotations

from dataclasses import dataclass

AS_WRITTEN = "as written"
AWS_ONLY_MOTO = "AWS-only: run against moto"
AWS_ONLY_TEMPLATE = "AWS-only: against the synthesized template"
NOT_IN_FULL = "not re-run in full inside the suite"

WALK = "tests/e2e/test_readme_walkthrough.py::"
OPERATE = "tests/e2e/test_readme_operate.py::"
MAKE = "tests/infra/test_readme_make_targets.py::"
STACK = "tests/integration/test_cli_stack.py::"
SOURCES = "tests/integration/test_cli_sources.py::"
FORWARDING_LOG = "tests/e2e/test_forwarding_log.py::test_an_outage_is_logged_listed_and_its_period_resent_once"


@dataclass(frozen=True)
class Run:
    test: str  # pytest node id (file::function)
    how: str = AS_WRITTEN


REGISTRY: dict[str, tuple[Run, ...]] = {
    # --- top of README and "Try it locally": the walkthrough, the real `make run` on free ports
    "make run": (
        Run(
            WALK + "test_make_run_prints_the_url_the_development_signing_secrets_and_examples",
            "as written, INBOX_PORT/INBOX_AWS_PORT/INBOX_GATEWAY_PORT set to free ports",
        ),
        Run(WALK + "test_ctrl_c_stops_make_run", "as written, stopped with Ctrl-C (SIGINT to its process group)"),
    ),
    "make test": (
        Run(
            MAKE + "test_make_test_is_lint_beside_every_tier",
            f"{NOT_IN_FULL} (it is the suite itself): `make -n test` shows lint, then pytest on every tier",
        ),
    ),
    "make check": (
        Run(
            MAKE + "test_make_check_is_lint_then_unit_and_integration_without_slow_tests",
            f"{NOT_IN_FULL} (its tests are the suite's own): `make -n check` shows lint, then pytest on unit and "
            "integration without e2e, infra or slow",
        ),
    ),
    ".venv/bin/inbox send stripe": (Run(WALK + "test_inbox_send_stripe_posts_a_correctly_signed_sample_webhook"),),
    ".venv/bin/inbox events list": (
        Run(WALK + "test_inbox_events_list_shows_it_in_the_inbox_and_it_is_processed_a_moment_later"),
    ),
    ".venv/bin/inbox events show stripe evt_... --json": (
        Run(
            WALK + "test_inbox_events_show_prints_the_event_with_its_raw_body",
            "evt_... = the event id `inbox events list` printed",
        ),
    ),
    ".venv/bin/inbox simulate --payments 20": (
        Run(WALK + "test_inbox_simulate_drives_lifecycles_with_duplicates_and_prints_a_verdict_table"),
    ),
    ".venv/bin/inbox payments show stripe pi_... --json": (
        Run(
            WALK + "test_inbox_payments_show_prints_the_payment_the_send_made",
            "pi_... = the payment id `inbox send stripe` printed",
        ),
    ),
    # --- Deploy: AWS-only
    "cdk deploy": (
        Run(
            MAKE + "test_make_deploy_is_the_pinned_cdk_cli_on_this_app_with_cdk_args",
            f"{AWS_ONLY_TEMPLATE}: `make -n deploy` shows the pinned `npx --no-install cdk deploy` on app.py",
        ),
        Run(MAKE + "test_make_synth_writes_the_template_a_deploy_would_deploy", AWS_ONLY_TEMPLATE),
    ),
    "make deploy": (
        Run(
            MAKE + "test_make_deploy_is_the_pinned_cdk_cli_on_this_app_with_cdk_args",
            f'{AWS_ONLY_TEMPLATE}: `make -n deploy CDK_ARGS="-c retention_days=60"` shows the pinned cdk CLI call',
        ),
        Run(MAKE + "test_make_synth_writes_the_template_a_deploy_would_deploy", AWS_ONLY_TEMPLATE),
    ),
    'make deploy CDK_ARGS="-c alarm_email=oncall@example.com"': (
        Run(
            MAKE + "test_make_deploy_with_an_alarm_address_passes_it_to_cdk",
            f'{AWS_ONLY_TEMPLATE}: `make -n deploy CDK_ARGS="-c alarm_email=oncall@example.com"` shows the context '
            "passed to the pinned cdk CLI",
        ),
        Run(
            "tests/infra/test_settings.py::test_context_values_reach_the_function_and_the_names",
            f"{AWS_ONLY_TEMPLATE}: the app with alarm_email set subscribes it, and the deploy summary names it and "
            "warns of nothing",
        ),
    ),
    "inbox cost": (
        Run(
            "tests/infra/test_deploy_summary.py::test_a_one_source_stack_is_summarized_as_inbox_cost_prices_it",
            "as written and with --json (the CLI command in-process), on the synthesized stack's sources.json",
        ),
    ),
    "inbox --stack NAME sources list": (
        Run(
            SOURCES + "test_sources_list_of_a_deployed_stack_shows_each_url_and_that_the_secrets_are_placeholders",
            f"{AWS_ONLY_MOTO}: NAME = the moto stack's name; as written and with --json",
        ),
    ),
    "make bootstrap": (
        Run(
            MAKE + "test_make_bootstrap_is_the_pinned_cdk_cli_bootstrapping_for_this_app",
            f"{AWS_ONLY_TEMPLATE}: `make -n bootstrap` shows the pinned `cdk bootstrap` on app.py",
        ),
    ),
    "make synth": (
        Run(
            MAKE + "test_make_synth_writes_the_template_a_deploy_would_deploy",
            "as written, CDK_OUTDIR set to a temporary directory (not the shared cdk.out/)",
        ),
    ),
    # --- docs/cli.md: the commands table
    "inbox events list [--json]": (
        Run(WALK + "test_inbox_events_list_shows_it_in_the_inbox_and_it_is_processed_a_moment_later", "without --json"),
        Run(OPERATE + "test_stats_counts_what_the_inbox_holds", "with --json"),
        Run("tests/e2e/test_operations.py::test_retention_run_archives_what_it_expires", "with --json"),
    ),
    "inbox events show SOURCE EVENT_ID [--json]": (
        Run(
            OPERATE + "test_events_show_and_payments_show_print_readable_tables_without_json",
            "SOURCE=stripe (a default source), EVENT_ID of a simulated event; without --json",
        ),
        Run(
            "tests/e2e/test_local_ingest.py::test_inbox_send_is_stored_and_listed",
            "SOURCE=each of stripe/asaas/standard (default sources), EVENT_ID of the send; with --json",
        ),
    ),
    "inbox payments show SOURCE RESOURCE_ID [--json]": (
        Run(
            OPERATE + "test_events_show_and_payments_show_print_readable_tables_without_json",
            "SOURCE=stripe (a default source), RESOURCE_ID of a simulated payment; with and without --json",
        ),
    ),
    "inbox stats [--json]": (
        Run(OPERATE + "test_stats_counts_what_the_inbox_holds", "with and without --json"),
        Run(
            "tests/e2e/test_operations.py::test_stats_json_counts_events_by_provider_and_status",
            "with and without --json",
        ),
    ),
    "inbox rejected list [--json]": (
        Run(
            "tests/integration/test_rejected_cli.py::test_list_is_newest_first_with_id_and_reason_and_filters",
            "the CLI command in-process against moto (the local stack's table names); with and without --json",
        ),
    ),
    "inbox rejected show ID [--json]": (
        Run(
            "tests/integration/test_rejected_cli.py::test_show_gives_headers_with_fingerprints_and_the_body",
            "ID from `inbox rejected list --json`; the CLI command in-process against moto; with and without --json",
        ),
    ),
    "inbox replay --provider P [--status failed] [--since T] [--until T] [--id ID ...] [--dry-run]": (
        Run(
            OPERATE + "test_replay_with_every_option_plans_without_changing_anything",
            "P=stripe, --status failed --since/--until T=ISO times --dry-run",
        ),
        Run(
            "tests/e2e/test_replay.py::test_a_failed_event_is_planned_then_replayed_and_processed",
            "P=stripe, --dry-run then the replay",
        ),
        Run("tests/e2e/test_replay.py::test_replay_by_id_reports_ids_it_did_not_select", "P=stripe, --id ID --id ID"),
        Run("tests/e2e/test_replay.py::test_the_human_readable_report", "P=asaas, --dry-run --since T"),
    ),
    "inbox retention run [--now ISO]": (
        Run(
            OPERATE + "test_retention_last_run_now_keeps_everything_then_2099_archives_everything",
            "without --now, then --now 2099-01-01T00:00:00Z",
        ),
        Run("tests/e2e/test_operations.py::test_retention_run_archives_what_it_expires", "--now ISO=a future moment"),
    ),
    "inbox outbox list [--json]": (
        Run(OPERATE + "test_outbox_list_shows_the_published_events_in_both_forms", "with and without --json"),
    ),
    "inbox outbox resend --url URL [--provider P]": (
        Run(
            OPERATE + "test_outbox_resend_with_a_provider_sends_nothing_already_delivered",
            "URL=the README receiver's, P=stripe",
        ),
        Run(
            "tests/integration/test_outbox_resend.py::test_the_command_resends_against_the_local_stack",
            "URL=a receiver on a free port (the CLI command in-process, against moto)",
        ),
    ),
    "inbox outbox attempts EVENT_ID [--json]": (
        Run(FORWARDING_LOG, "EVENT_ID = a published event's id; with and without --json"),
        Run(
            "tests/integration/test_forwarding_log.py::test_the_forwarder_lambda_records_each_attempt_and_the_cli_lists_them",
            "the CLI command in-process, against moto, the attempts the forwarder Lambda recorded",
        ),
    ),
    "inbox outbox list --undelivered [--json]": (
        Run(FORWARDING_LOG, "with and without --json, during an outage and after the resend"),
    ),
    "inbox outbox resend --since T [--until T] [--force]": (
        Run(FORWARDING_LOG, "T = a moment before the outage; then again, then with --force"),
        Run(
            "tests/integration/test_forwarding_log.py::test_resend_since_sends_the_period_once_and_force_sends_it_again",
            "--since 1h, --since ISO --force, --until 1h --force (the CLI command in-process, against moto)",
        ),
    ),
    "inbox outbox attempts EVENT_ID": (Run(FORWARDING_LOG, "EVENT_ID = a published event's id"),),
    "inbox outbox list --undelivered": (Run(FORWARDING_LOG, "during an outage and after the resend"),),
    "inbox outbox resend --since 1h": (
        Run(
            "tests/integration/test_forwarding_log.py::test_resend_since_sends_the_period_once_and_force_sends_it_again",
            "as written, plus --url (the CLI command in-process, against moto)",
        ),
    ),
    "inbox receiver --port P [--secret whsec_...] [--json]": (
        Run(
            OPERATE + "test_the_receiver_block_prints_one_verified_line_per_transition",
            "P=a free port, secret from env",
        ),
        Run(
            OPERATE + "test_a_receiver_with_secret_and_json_prints_a_json_summary_on_ctrl_c",
            "P=a free port, --secret whsec_<the block's secret> --json",
        ),
    ),
    "inbox listen": (
        Run(
            "tests/e2e/test_listen.py::test_listen_forwards_a_local_payments_event_signed_with_the_secret_it_printed",
            "as `inbox listen --forward-to URL` on the local stack (the command needs a URL)",
        ),
    ),
    "inbox listen --forward-to URL [--secret whsec_...]": (
        Run(
            "tests/e2e/test_listen.py::test_listen_forwards_a_local_payments_event_signed_with_the_secret_it_printed",
            "URL=a receiver on a free port; without --secret (the receiver holds the secret the listener printed)",
        ),
    ),
    "inbox listen --stack NAME --forward-to URL [--secret whsec_...]": (
        Run(
            "tests/integration/test_listen.py::test_the_readme_command_forwards_a_published_event_and_sigterm_cleans_up",
            f"{AWS_ONLY_MOTO}: the CLI command in-process, NAME a CloudFormation stack with an EventBusName output, "
            "URL=a receiver on a free port, --secret whsec_<the test's>; stopped by SIGTERM",
        ),
    ),
    "inbox send SOURCE [--status paid] [--resource-id ...]": (
        Run(
            SOURCES + "test_send_signs_with_the_sources_own_secret_and_posts_to_its_url",
            "SOURCE=shop-b of a two-source sources.json, --url of a capturing server; signed with shop-b's secret",
        ),
        Run(
            OPERATE + "test_send_with_status_and_resource_id",
            "SOURCE=asaas (a default source) --status paid --resource-id pay_...",
        ),
        Run(
            "tests/e2e/test_local_ingest.py::test_inbox_send_is_stored_and_listed",
            "SOURCE=stripe/asaas/standard (default sources)",
        ),
        Run(
            "tests/e2e/test_replay.py::test_a_failed_event_is_planned_then_replayed_and_processed",
            "SOURCE=stripe --status pending --resource-id ...",
        ),
    ),
    # --- docs/cli.md: sources and secrets
    "inbox sources list [--json]": (
        Run(
            SOURCES + "test_sources_list_locally_shows_the_declared_sources_urls_and_where_their_secrets_come_from",
            "as written, with and without --json, on a sources.json of three sources (INBOX_SOURCES_FILE)",
        ),
    ),
    "inbox secrets set SOURCE --kind signing --stack NAME": (
        Run(
            SOURCES + "test_secrets_set_reads_the_value_from_stdin_and_never_prints_it",
            f"{AWS_ONLY_MOTO}: SOURCE=stripe-br, NAME a CloudFormation stack with the deployed outputs, the value "
            "piped in",
        ),
        Run(SOURCES + "test_secrets_set_refuses_what_it_cannot_store_and_writes_nothing", AWS_ONLY_MOTO),
    ),
    "inbox secrets set SOURCE --kind api-key --stack NAME": (
        Run(
            SOURCES + "test_secrets_set_reads_the_value_from_stdin_and_never_prints_it",
            f"{AWS_ONLY_MOTO}: SOURCE=stripe-br, the key piped in",
        ),
    ),
    "inbox secrets set SOURCE --kind signing --previous --stack NAME": (
        Run(
            SOURCES + "test_previous_keeps_the_replaced_value_during_a_rotation",
            f"{AWS_ONLY_MOTO}: SOURCE=stripe-br, two values piped in turn",
        ),
    ),
    "inbox replay --source S [--dry-run]": (
        Run(
            "tests/integration/test_replay_workflow.py::test_inbox_replay_source_replays_that_source_only",
            "S=stripe-br, with and without --dry-run, the local state machine in moto",
        ),
    ),
    "inbox send SOURCE --account acct_... [--thin]": (
        Run(
            "tests/e2e/test_connect.py::test_a_connected_accounts_event_is_processed_and_its_payment_shows_the_account",
            "SOURCE=stripe (a default source), acct_...=acct_1LocalSeller0001, with and without --thin, plus "
            "--status paid --amount 2590",
        ),
        Run("tests/e2e/test_connect.py::test_an_account_that_is_not_one_is_refused_by_the_cli", "a CR/LF account"),
        Run(
            "tests/e2e/test_sources_local.py::"
            "test_inbox_send_to_a_named_stripe_source_from_a_connect_account_is_refetched_within_both",
            "SOURCE=stripe-us of a sources.json (a named Stripe source), acct_...=acct_1SourcesSeller01, --status paid",
        ),
    ),
    "inbox cost --events-per-month N [--region us-east-1]": (
        Run(
            "tests/unit/test_cost_model.py::test_the_command_prints_the_lines", "N=1000000 (the CLI command in-process)"
        ),
        Run("tests/unit/test_cost_model.py::test_an_unknown_region_is_a_clear_error", "--region of no price list"),
    ),
    "--stack NAME": (
        Run(
            STACK + "test_stats_with_stack_counts_the_deployed_stacks_events",
            f"{AWS_ONLY_MOTO}: `inbox --stack NAME stats [--json]`, NAME a CloudFormation stack in moto",
        ),
        Run(
            STACK + "test_events_list_with_stack_lists_the_deployed_stacks_events",
            f"{AWS_ONLY_MOTO}: `inbox --stack NAME events list [--json]`",
        ),
        Run(
            "tests/integration/test_console.py::test_with_stack_the_console_reads_the_deployed_stack",
            f"{AWS_ONLY_MOTO}: `inbox console --stack NAME`'s app (the target its --stack resolves) in the test client",
        ),
    ),
    "inbox --stack NAME stats": (
        Run(
            STACK + "test_stats_with_stack_counts_the_deployed_stacks_events",
            f"{AWS_ONLY_MOTO}: NAME a CloudFormation stack in moto with the outputs the CLI reads",
        ),
    ),
    "inbox console [--port P]": (
        Run(
            "tests/e2e/test_console.py::test_the_overview_shows_what_inbox_stats_says",
            "--port 0 (the URL it prints) on the local stack, its pages driven in headless Chromium",
        ),
        Run(
            "tests/e2e/test_console.py::test_a_replay_started_from_the_page_changes_what_the_cli_shows",
            "--port 0, a replay planned, confirmed and followed on the page",
        ),
    ),
    # --- docs/cli.md: scenarios to try by hand
    "inbox chaos": (
        Run(
            "tests/e2e/test_chaos.py::test_a_seeded_chaos_run_loses_nothing_and_applies_nothing_twice",
            "with --seed and a smaller --payments",
        ),
    ),
    "inbox stats": (Run(OPERATE + "test_stats_counts_what_the_inbox_holds"),),
    "curl -X POST $GATEWAY/_sim/faults -d '{\"error_rate\": 1}'": (
        Run(
            OPERATE + "test_scenario_a_provider_api_fails_for_a_while",
            "$GATEWAY = the simulator URL make run printed; then with '{\"error_rate\": 0}'",
        ),
    ),
    "inbox simulate --payments 5 --provider stripe": (Run(OPERATE + "test_scenario_a_provider_api_fails_for_a_while"),),
    "inbox events list --status failed": (Run(OPERATE + "test_scenario_a_provider_api_fails_for_a_while"),),
    "inbox replay --provider stripe": (Run(OPERATE + "test_scenario_a_provider_api_fails_for_a_while"),),
    "inbox retention run --now 2099-01-01T00:00:00Z": (
        Run(OPERATE + "test_retention_last_run_now_keeps_everything_then_2099_archives_everything"),
    ),
    # --- docs/cli.md: downstream events and the receiver block
    "inbox outbox list": (Run(OPERATE + "test_outbox_list_shows_the_published_events_in_both_forms"),),
    "inbox receiver": (Run(OPERATE + "test_the_receiver_block_prints_one_verified_line_per_transition"),),
    "export INBOX_FORWARD_SECRET=\"whsec_$(python3 -c 'import base64, os; "
    "print(base64.b64encode(os.urandom(32)).decode())')\"": (
        Run(OPERATE + "test_the_receiver_block_prints_one_verified_line_per_transition", "as written, by bash"),
    ),
    ".venv/bin/inbox receiver --port 8790": (
        Run(OPERATE + "test_the_receiver_block_prints_one_verified_line_per_transition", "8790 -> a free port"),
    ),
    "INBOX_FORWARD_URL=http://127.0.0.1:8790/ make run": (
        Run(
            OPERATE + "test_the_receiver_block_prints_one_verified_line_per_transition",
            "8790 -> the receiver's free port; INBOX_MAX_ATTEMPTS=1 for the failure scenario on the same stack",
        ),
    ),
    ".venv/bin/inbox simulate --payments 20 --settle-rounds": (
        Run(OPERATE + "test_the_receiver_block_prints_one_verified_line_per_transition"),
    ),
    # --- docs/benchmarks.md and docs/contributing.md
    "make bench": (
        Run(
            MAKE + "test_make_bench_runs_every_section",
            f"{NOT_IN_FULL} (~2 min): `make -n bench` shows `python -m bench`",
        ),
        Run(
            "tests/unit/test_bench_figures.py::test_a_run_measures_latency_from_the_first_post_to_processed_and_rate_over_the_whole_run",
            "bench/end_to_end.py's figures on small inputs",
        ),
    ),
    "make chaos": (
        Run(
            MAKE + "test_make_chaos_runs_a_seeded_300_payment_chaos_run_then_the_ingest_fuzzing",
            f"{NOT_IN_FULL} (minutes): `make -n chaos` shows the chaos run and the fuzzing",
        ),
        Run(
            "tests/e2e/test_chaos.py::test_a_seeded_chaos_run_loses_nothing_and_applies_nothing_twice",
            "the same chaos module, fewer payments",
        ),
        Run(
            "tests/integration/test_ingest_fuzz.py::test_a_validly_signed_delivery_is_stored_exactly_once",
            "the same fuzzing, default example count",
        ),
    ),
    ".venv/bin/inbox simulate --payments 100": (
        Run(OPERATE + "test_simulate_100_payments_prints_its_throughput_and_latency"),
    ),
    ".venv/bin/python -m bench end_to_end": (
        Run(
            "tests/e2e/test_readme_bench.py::test_bench_end_to_end_measures_and_keeps_the_other_sections",
            f"{NOT_IN_FULL}: bench's main(['end_to_end']) on a few events, results into a temporary file",
        ),
    ),
    ".venv/bin/python -m bench render": (
        Run(
            "tests/unit/test_bench_render.py::test_the_render_command_writes_the_pages_of_its_own_repository_as_written",
            "as written, in a copy of the repository's pages and bench package (one figure made stale)",
        ),
    ),
    ".venv/bin/python -m bench render --check": (
        Run("tests/unit/test_bench_render.py::test_the_check_command_passes_on_the_repository_as_written"),
    ),
    "inbox cost --events-per-month 1000000": (Run("tests/unit/test_cost_model.py::test_the_command_prints_the_lines"),),
    # --- the signature doctor (inbox_cli/doctor/)
    "inbox doctor SOURCE --body FILE --header 'NAME: VALUE' [--query 'K=V'] [--secret S] [--at EPOCH] [--json]": (
        Run(
            "tests/unit/test_doctor_cli.py::test_a_re_serialized_body_is_one_sentence_and_exit_1",
            "SOURCE=stripe, a body file, the delivery's headers, --at (in-process)",
        ),
        Run("tests/unit/test_doctor_cli.py::test_a_valid_delivery_answers_valid_with_exit_0", "with --json"),
        Run("tests/unit/test_doctor_cli.py::test_a_signature_in_the_query_is_given_with_query", "with --query 'K=V'"),
        Run(
            "tests/unit/test_doctor_cli.py::test_secret_given_on_the_command_line_is_checked_against_the_configured_one",
            "with --secret S --json",
        ),
    ),
    ".venv/bin/inbox doctor stripe --body docs/examples/stripe-reserialized.json --header 'Stripe-Signature: "
    "t=1764590400,v1=085b1135ee35fd55fbff9a21a951712cceec9cd234e53b3088d2e1f586e3d2f3' --at 1764590400": (
        Run("tests/unit/test_doctor_cli.py::test_readme_doctor_example_runs_as_written"),
    ),
}
