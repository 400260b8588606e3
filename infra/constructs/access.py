"""What a function may do with a resource its code uses, said once: the environment variable that names the
resource to the code and the actions its role is granted, on that resource's ARN alone.

The resource's construct hands out its `Access` (`InboxStorage.table_access("dynamodb:PutItem")`, ...): which
variable names which table or queue lives there, not in every function that uses it. A function lists what it uses
(infra/constructs/python_function.py names each in its environment and grants each its actions); what is not one
resource's actions (a secret's read, the declared S3 grants, a condition on the leading keys) stays beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs


@dataclass(frozen=True)
class Access:
    """One resource a function's code uses: the environment variable that names it to the code (`variable`, with
    `value`: its name or URL), and the actions its role may take on `arn` alone. Either half may be absent: a queue
    whose event source mapping grants the consuming is only named; an index is only granted. The resource's
    construct makes it (`InboxStorage.table_access`, ...), so which variable names which resource is said once."""

    variable: str | None = None
    value: str | None = None
    arn: str | None = None
    actions: tuple[str, ...] = ()

    def grant(self, grantee: iam.IGrantable) -> None:
        if self.actions:
            if self.arn is None:
                raise ValueError(f"actions {self.actions} granted on no resource")
            grant_on(grantee, self.arn, *self.actions)


def table_access(table: dynamodb.ITable, variable: str | None, actions: Sequence[str]) -> Access:
    """`actions` on `table`'s ARN alone (never its indexes), the table named by `variable` (None: not named)."""
    return Access(variable, table.table_name if variable else None, table.table_arn, tuple(actions))


def index_access(table: dynamodb.ITable, index_name: str, actions: Sequence[str]) -> Access:
    """`actions` (Query) on one index of `table`; the code names the index itself (shared/definitions)."""
    return Access(arn=f"{table.table_arn}/index/{index_name}", actions=tuple(actions))


def queue_access(queue: sqs.IQueue, variable: str, actions: Sequence[str]) -> Access:
    """`queue`'s URL in `variable`, and `actions` on it."""
    return Access(variable, queue.queue_url, queue.queue_arn, tuple(actions))


def grant_on(grantee: iam.IGrantable, resource_arn: str, *actions: str) -> None:
    """`actions` on `resource_arn` alone: a table's ARN without its indexes (``table.grant`` would add
    ``<table>/index/*`` for a table with indexes, where item actions have no meaning), one index, one queue."""
    iam.Grant.add_to_principal(grantee=grantee, actions=list(actions), resource_arns=[resource_arn])
