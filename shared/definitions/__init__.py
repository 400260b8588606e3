"""Definitions shared by the CDK stack, the local runtime and the Lambdas: one source of truth.

Pure on purpose (standard library only, no I/O, no CDK or boto3 import; the one piece of logic is the inbox
lifecycle's composer, pure too, which derives a write's request from its row): the local runtime builds its moto
resources from these values, the stack builds CloudFormation from the same values, and the Lambdas read the same
names and defaults, so local, cloud and function code cannot drift. It is the one package of `shared/` that
`infra/` and the local stack's resource emulation may import (docs/architecture.md, "Which way imports run";
tests/unit/test_import_rules.py). Nothing here reads a file: sources.json is read by infra/sources_file.py.

One module per concern, each read as `definitions.NAME` or `from shared.definitions import NAME` (every public name
of every module is the package's: tests/unit/test_definitions_package.py checks that no two modules define one):
- resources: the deployed resources' names and settings (tables, indexes, queue, API, sizing, secrets' tags,
  environment variables, stack outputs, sweeper, archive, rejected-delivery log, metric names);
- lifecycle: the inbox item's statuses, the writes that move it and the requests they derive, the Pipe's dispatch;
- downstream: the outbox, the event bus, forwarding and the forwarding log;
- catalog: the provider catalog (every provider folder's entry), its checks and derived lists; the types an entry
  is written in, its handler kinds and trust classes, are shared/providers/entry_types.py's, re-exported here;
- sources: a deployment's sources (sources.json): their type, parsing and validation, a source's keys;
- s3_grants: each function's S3 permissions (read by its own name, `shared.definitions.s3_grants`).
"""

from shared.definitions.catalog import *  # noqa: F403
from shared.definitions.downstream import *  # noqa: F403
from shared.definitions.lifecycle import *  # noqa: F403
from shared.definitions.resources import *  # noqa: F403
from shared.definitions.sources import *  # noqa: F403
from shared.providers.entry_types import *  # noqa: F403
