"""Fixtures shared by every tier: no test ever reaches a real AWS account."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

# Before any boto3 client exists: dummy credentials, a fixed region, and no account-id endpoints (moto).
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_SERVICE_NAME": "webhook-inbox",
        "POWERTOOLS_METRICS_NAMESPACE": "WebhookInbox",
        "POWERTOOLS_DEV": "false",
    }
)
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_PROFILE", None)

# The developer's own set-up changes nothing about a run. No INBOX_* variable of their shell reaches a test (a
# signing secret, a port, a sources file, a forward URL), but the ones that steer the tests themselves; and the
# declaration is the default one (a source per provider), written to a file of the run's own that INBOX_SOURCES_FILE
# names: a sources.json at the repository root is never read, by this process or by the local stacks, `inbox`
# commands and synths it starts (they inherit this environment). tests/unit/test_hermetic_run.py holds it.
TEST_CONTROLS = frozenset({"INBOX_CONSOLE_SCREENSHOTS", "INBOX_FUZZ_EXAMPLES"})
for _name in [name for name in os.environ if name.startswith("INBOX_") and name not in TEST_CONTROLS]:
    del os.environ[_name]
DEFAULT_SOURCES_FILE = Path(tempfile.mkdtemp(prefix="inbox-tests-")) / "sources.json"
atexit.register(shutil.rmtree, DEFAULT_SOURCES_FILE.parent, ignore_errors=True)

from infra import sources_file  # noqa: E402
from shared import definitions  # noqa: E402 - once the environment above is set

DEFAULT_SOURCES_FILE.write_text(definitions.sources_json(definitions.default_sources()), encoding="utf-8")
os.environ[definitions.ENV_SOURCES_FILE] = str(DEFAULT_SOURCES_FILE)
# And in this process, a test that hands the file's reader (infra/sources_file.py) an environment of its own without
# INBOX_SOURCES_FILE reads the run's file too, never the checkout's: the same declaration "no file" means.
_CHECKOUTS_SOURCES_FILE = sources_file.sources_file_path({})
_sources_file_path = sources_file.sources_file_path


def _the_runs_sources_file(environ: Mapping[str, str] | None = None) -> Path:
    path = _sources_file_path(environ)
    return DEFAULT_SOURCES_FILE if path == _CHECKOUTS_SOURCES_FILE else path


sources_file.sources_file_path = _the_runs_sources_file

from inbox_local import moto_speedups  # noqa: E402
from tests import aws_speedups  # noqa: E402 - once the environment above is set

aws_speedups.install()
moto_speedups.install()  # the embedded AWS's caches of moto's per-request work, in-process moto too


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` groups by `xdist_group` again. pytest-xdist (3.8) tells the scheduler an item's group by
    suffixing its node id (`...::test@infra`) through `item._nodeid`, which pytest 9.2's structured node ids no
    longer read (pytest-xdist issue 1386): every group was silently spread over the workers like `--dist load`, so
    each worker synthesized the infra tier's apps and started an e2e module's stack. Same suffix, written where
    pytest 9.2 keeps the id; nothing is done when xdist's own suffix took (an xdist with the fix, an older pytest)."""
    if not getattr(config.option, "loadgroup", False):  # set on a worker when `--dist loadgroup`
        return
    for item in items:
        nodeid = item.nodeid
        groups = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if groups and nodeid.rfind("@") <= nodeid.rfind("]"):  # xdist's own test for a suffix
            from _pytest.nodeid import NodeId  # pytest 9.2's; an older pytest took xdist's suffix above

            grouped = f"{nodeid}@{'_'.join(sorted(groups))}"
            item._id = NodeId.parse(grouped)
            if item.nodeid != grouped:  # a pytest that keeps the id elsewhere again: say so, never spread silently
                raise pytest.UsageError(f"--dist loadgroup: could not group {nodeid} (tests/conftest.py)")


@pytest.fixture(autouse=True, scope="session")
def _aws_limits() -> None:
    """In-process moto refuses what AWS refuses, as the local stack's embedded AWS does (inbox_local/aws_limits.py).
    Imported here, once the environment above is set."""
    from inbox_local import aws_limits

    aws_limits.install()


@pytest.fixture(autouse=True)
def _fresh_clients() -> Iterator[None]:
    """Cached boto3 clients, and the functions' roots that hold them, must not outlive the moto mock they were made
    under."""
    from shared import aws
    from shared.roots import reset_roots

    aws.reset_clients()
    reset_roots()
    _forget_powertools_parameters()
    yield
    aws.reset_clients()
    reset_roots()
    _forget_powertools_parameters()


def _forget_powertools_parameters() -> None:
    """Secrets read through Powertools are cached for minutes, and its providers hold boto3 clients: neither may
    outlive the test (a secret of one test's moto read by the next), once a test has imported the module."""
    parameters_base = sys.modules.get("aws_lambda_powertools.utilities.parameters.base")
    if parameters_base is not None:
        parameters_base.DEFAULT_PROVIDERS.clear()
