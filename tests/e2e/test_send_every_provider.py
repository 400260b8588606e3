"""A newcomer's first webhook, for every provider: `inbox send P` on `make run` ends processed or ignored."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from shared.gateway.registry import supported_providers
from shared.providers.registry import provider_names
from tests.e2e.conftest import ROOT, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

INBOX = ROOT / ".venv" / "bin" / "inbox"
SETTLED = {"processed", "ignored", "failed"}


def inbox(stack, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI exactly as a user runs it, against the stack of the test."""
    return subprocess.run(
        [str(INBOX), *args], env=stack.env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_inbox_send_is_processed_for_every_provider(local_stack):
    # Given the local stack is running (what `make run` starts)
    sent: dict[str, str] = {}
    # When a newcomer sends each provider's sample webhook with the CLI, as the README says
    for provider in provider_names():
        result = inbox(local_stack, "send", provider)
        assert result.returncode == 0, f"inbox send {provider}: {result.stdout}\n{result.stderr}"
        hint = re.search(rf"inbox events show {provider} (\S+)", result.stdout)
        assert hint, f"inbox send {provider} printed no way to look at its event: {result.stdout}"
        sent[provider] = hint.group(1)

    # Then every event settles (waited for by reading the inbox table in-process: an `inbox` call per provider and
    # per second was ~20 interpreters a round), and none of them failed: each is processed, or ignored when it
    # changes nothing, as `inbox events list` then shows (one call for all of them)
    wait_until(
        lambda: [local_stack.stored_event(provider, event_id).get("status") for provider, event_id in sent.items()],
        lambda seen: all(status in SETTLED for status in seen),
        timeout=90,
    )
    listed = inbox(local_stack, "events", "list", "--json", "--limit", "100000")
    assert listed.returncode == 0, f"{listed.stdout}\n{listed.stderr}"
    rows = {(row["provider"], row["event_id"]): row for row in json.loads(listed.stdout)}
    statuses = {provider: rows.get((provider, event_id), {}) for provider, event_id in sent.items()}
    assert all(statuses.values()), {provider: event_id for provider, event_id in sent.items() if not statuses[provider]}
    not_settled_well = {
        provider: (item.get("status"), local_stack.stored_event(provider, sent[provider]).get("last_error"))
        for provider, item in statuses.items()
        if item.get("status") not in ("processed", "ignored")
    }
    assert not not_settled_well
    # and a sample of a provider the processor refetches from was read back from the simulator and applied
    refetched = {provider: statuses[provider]["status"] for provider in supported_providers()}
    assert refetched == dict.fromkeys(supported_providers(), "processed")
