"""The local stack's fault knobs (`/_local/faults` on its API server, `inbox_local/faults.py`), over HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import click

FAULTS_PATH = "/_local/faults"


class LocalFaults:
    def __init__(self, api_url: str) -> None:
        self.url = api_url.rstrip("/") + FAULTS_PATH

    def _call(self, method: str, payload: Any = None) -> dict[str, Any]:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(  # noqa: S310 - the local stack
            self.url, data=data, method=method, headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                document: dict[str, Any] = json.loads(response.read())
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise click.ClickException(
                    "this local stack has no fault injection (/_local/faults): restart it with the current code"
                ) from None
            raise click.ClickException(f"{method} {FAULTS_PATH} -> {error.code}: {error.read().decode()}") from None
        return document

    def get(self) -> dict[str, Any]:
        return self._call("GET")

    def set(self, **changes: Any) -> dict[str, Any]:
        return self._call("POST", changes)

    def off(self) -> dict[str, Any]:
        return self._call("DELETE")
