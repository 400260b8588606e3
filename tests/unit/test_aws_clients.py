"""The functions' shared AWS clients (shared/aws.py): one per service and kind, each with its timeouts and retries.
Made without a network call: a client is only configured here, never used."""

from __future__ import annotations

from typing import Any

from shared import aws


def retries(client: Any) -> dict[str, Any]:
    """The client's retry configuration as botocore resolved it (`total_max_attempts` counts the first try)."""
    return dict(client.meta.config.retries)


def test_each_client_is_made_once_and_shared():
    # Given the shared clients, When each is asked for twice, Then the same one comes back
    for make in (aws.dynamodb, aws.dynamodb_best_effort, aws.s3, aws.sqs, aws.events):
        assert make() is make()
    # And the best-effort DynamoDB client is another client than the standard one
    assert aws.dynamodb() is not aws.dynamodb_best_effort()


def test_the_standard_clients_time_out_fast_and_retry_a_bounded_number_of_times():
    config: Any = aws.dynamodb().meta.config
    assert (config.connect_timeout, config.read_timeout) == (2, 5)
    assert retries(aws.dynamodb())["mode"] == "standard"


def test_the_best_effort_client_has_shorter_timeouts_and_fewer_attempts_than_the_standard_one():
    config: Any = aws.dynamodb_best_effort().meta.config
    assert (config.connect_timeout, config.read_timeout) == (1, 1)
    best_effort, standard = retries(aws.dynamodb_best_effort()), retries(aws.dynamodb())
    assert best_effort["mode"] == "standard"
    # one attempt (a record whose write fails is only counted), where the standard client makes 4 (3 retries)
    assert (best_effort["total_max_attempts"], standard["total_max_attempts"]) == (1, 4)


def test_the_publishers_events_client_keeps_the_sdks_defaults():
    # Given the SDK's own defaults (a client made with no configuration of ours)
    import boto3

    defaults: Any = boto3.session.Session().client("events").meta.config
    # Then the publisher's client has the same timeouts and retries
    config: Any = aws.events().meta.config
    assert (config.connect_timeout, config.read_timeout) == (defaults.connect_timeout, defaults.read_timeout)
    assert config.retries == defaults.retries


def test_forgotten_clients_are_made_again():
    first = aws.sqs()
    aws.reset_clients()
    assert aws.sqs() is not first
