"""`inbox console`: the CLI's read and replay functions (inbox_cli/operations.py) behind web pages.

A Flask app served on 127.0.0.1 only, with the operator's own AWS credentials: it can read and do exactly what the
CLI can, nothing more, so it needs no login. What it guards against is other web pages in the operator's browser:
- a page elsewhere POSTing a replay (CSRF): every POST carries this process's random token and, when the browser
  sends one, an Origin of the console itself;
- a DNS-rebinding page reading the console under its own name: requests whose Host is not the console's are refused;
- webhook bodies carrying HTML or script (XSS): every value is escaped by the templates (Jinja's autoescape), chart
  data goes in as JSON (`tojson`), and the Content-Security-Policy allows no inline script at all.
Listings are bounded (MAX_PAGE_SIZE), so a large inbox cannot make a page unbounded.
"""

from __future__ import annotations

import hmac
import json
import secrets
from typing import Any

from flask import Flask, Response, abort, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException

from inbox_cli import operations, rejected
from inbox_cli.replay import ReplayFailed, ReplayRequest, normalize_time
from inbox_cli.target import Target
from shared import definitions
from shared.inbox.model import EventStatus
from shared.providers.registry import provider_names

DEFAULT_PAGE_SIZE = 50
# Rows of the rejected-deliveries page the doctor diagnoses (one GetItem and one diagnosis each); the others link to
# their own page, which always has it.
DIAGNOSED_ROWS = 20
MAX_PAGE_SIZE = 200
REPLAYABLE_STATUSES = (EventStatus.FAILED.value, EventStatus.PENDING.value)  # what `inbox replay --status` takes
# A dry run or a replay the page waits for: the plan of a local stack takes about a second.
PLAN_TIMEOUT_SECONDS = 120
CSRF_FIELD = "csrf_token"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the console's own forms
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def create_app(target: Target, *, port: int, stack_name: str | None = None, token: str | None = None) -> Flask:
    """The console for `target`, answering only as http://127.0.0.1:`port` (or localhost:`port`)."""
    app = Flask(__name__)
    _guard(app, port=port, csrf_token=token or secrets.token_urlsafe(32), stack_label=stack_name or "local stack")
    _read_pages(app, target)
    _rejected_pages(app, target)
    _replay_pages(app, target)
    return app


def _guard(app: Flask, *, port: int, csrf_token: str, stack_label: str) -> None:
    """The checks every request passes, the headers every response carries, and the error pages."""
    allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    allowed_origins = {f"http://{host}" for host in allowed_hosts}

    @app.before_request
    def refuse_foreign_requests() -> None:
        if request.host not in allowed_hosts:
            abort(421, f"this console answers as 127.0.0.1:{port} only")
        if request.method == "POST":
            origin = request.headers.get("Origin")
            if origin is not None and origin not in allowed_origins:
                abort(403, "a request from another site")
            if not hmac.compare_digest(request.form.get(CSRF_FIELD, ""), csrf_token):
                abort(403, "missing or wrong form token: reload the page and try again")

    @app.after_request
    def secure(response: Response) -> Response:
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.context_processor
    def common() -> dict[str, Any]:
        return {"stack_label": stack_label, "csrf_field": CSRF_FIELD, "csrf_token": csrf_token}

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> tuple[str, int]:
        return render_template("error.html", title=error.name, message=error.description), error.code or 500

    @app.errorhandler(operations.NotFound)
    def not_found(error: operations.NotFound) -> tuple[str, int]:
        return render_template("error.html", title="Not found", message=str(error)), 404

    @app.errorhandler(operations.StackNotReady)
    @app.errorhandler(ReplayFailed)
    def cannot(error: Exception) -> tuple[str, int]:
        return render_template("error.html", title="Cannot do that", message=str(error)), 409


def _read_pages(app: Flask, target: Target) -> None:
    """Overview, events, one event, one payment's timeline, failed events."""

    @app.get("/")
    def overview() -> str:
        stats = operations.stats(target)
        flow = operations.flow_over_time(target)
        dead_letters = operations.dead_letter_depths(target)
        return render_template(
            "overview.html",
            stats=stats,
            statuses=[status.value for status in EventStatus],
            flow=flow,
            dead_letters=dead_letters,
        )

    @app.get("/events")
    def events() -> str:
        filters = operations.EventFilter(
            provider=_choice(request.args.get("provider"), provider_names()),
            source=_source(request.args.get("source")),
            status=_choice(request.args.get("status"), [status.value for status in EventStatus]),
            event_type=request.args.get("event_type") or None,
            since=_moment(request.args.get("since")),
            until=_moment(request.args.get("until")),
        )
        limit = _limit(request.args.get("limit"))
        rows = operations.list_events(target, filters, limit=limit)
        return render_template(
            "events.html",
            rows=rows,
            filters=filters,
            limit=limit,
            providers=provider_names(),
            sources=_source_names(target),
            statuses=[status.value for status in EventStatus],
        )

    @app.get("/events/<source>/<path:event_id>")
    def event(source: str, event_id: str) -> str:
        item = operations.show_event(target, source, event_id)
        body = operations.body_text(item.pop("body"))
        pretty = _pretty_json(body)
        headers = item.pop("headers", {}) or {}
        query = item.pop("query", {}) or {}
        fields = {name: _text(value) for name, value in sorted(item.items())}
        return render_template(
            "event.html",
            source=source,
            item=item,
            fields=fields,
            headers=headers,
            query=query,
            body=body,
            pretty=pretty,
        )

    @app.get("/payments")
    def find_payment() -> Any:
        source, resource_id = _source(request.args.get("source")), request.args.get("resource_id", "").strip()
        if source and resource_id:
            return redirect(url_for("payment", source=source, resource_id=resource_id))
        return render_template("find_payment.html", sources=_source_names(target))

    @app.get("/payments/<source>/<path:resource_id>")
    def payment(source: str, resource_id: str) -> str:
        timeline = operations.payment_timeline(target, source, resource_id)
        return render_template("payment.html", source=source, resource_id=resource_id, **timeline)

    @app.get("/failed")
    def failed() -> str:
        provider = _choice(request.args.get("provider"), provider_names())
        source = _source(request.args.get("source"))
        limit = _limit(request.args.get("limit"))
        rows = operations.failed_events(target, provider=provider, source=source, limit=limit)
        return render_template(
            "failed.html",
            rows=rows,
            provider=provider,
            source=source,
            limit=limit,
            providers=provider_names(),
            sources=_source_names(target),
        )


def _rejected_pages(app: Flask, target: Target) -> None:
    """The deliveries the ingest refused (`inbox rejected list/show`): secret-bearing headers only as fingerprints,
    as the log stores them."""

    @app.get("/rejected")
    def rejected_list() -> str:
        source = _source(request.args.get("source"))
        reason = _choice(request.args.get("reason"), definitions.REJECTION_REASONS)
        limit = _limit(request.args.get("limit"))
        rows = rejected.list_rejected(target, source=source, reason=reason, limit=limit)
        diagnoses = {row["id"]: _diagnosis(target, row["id"]) for row in rows[:DIAGNOSED_ROWS]}
        return render_template(
            "rejected.html",
            rows=rows,
            diagnoses=diagnoses,
            diagnosed_rows=DIAGNOSED_ROWS,
            source=source,
            reason=reason,
            limit=limit,
            sources=_source_names(target),
            reasons=definitions.REJECTION_REASONS,
        )

    @app.get("/rejected/<rejected_id>")
    def rejected_detail(rejected_id: str) -> str:
        delivery = rejected.load_rejected(target, rejected_id)
        document = delivery.to_json()
        body = document.pop("body")
        return render_template(
            "rejected_detail.html",
            delivery=delivery,
            diagnosis=_diagnosis(target, delivery),
            document=document,
            body=body,
            pretty=_pretty_json(body) if document["body_encoding"] == "utf-8" else None,
        )


def _diagnosis(target: Target, record: str | rejected.RejectedDelivery) -> dict[str, str]:
    """`inbox doctor --rejected`'s answer for a record (by id, or loaded): {"diagnosis", "detail"}. A record the
    doctor cannot work on (its source no longer declared, a secret unreadable) says so instead of failing the page."""
    from inbox_cli.doctor.command import diagnose_recorded  # noqa: PLC0415 - the doctor's profiles load on first use

    try:
        delivery = rejected.load_rejected(target, record) if isinstance(record, str) else record
        return diagnose_recorded(target, delivery).document()
    except Exception as error:  # a page shows every record, diagnosable or not
        message = getattr(error, "message", None) or str(error) or type(error).__name__
        return {"diagnosis": "unavailable", "detail": f"the doctor cannot diagnose this record: {message}"}


def _replay_pages(app: Flask, target: Target) -> None:
    """Plan (a dry run), confirm, start, follow: the functions `inbox replay` runs."""

    @app.get("/replay")
    def replay_form() -> str:
        return render_template(
            "replay.html",
            sources=_source_names(target),
            statuses=REPLAYABLE_STATUSES,
            selection=_selection(request.args),
        )

    @app.post("/replay/plan")
    def replay_plan() -> str:
        selection = _selection(request.form)
        request_ = _request(target, selection, dry_run=True)
        report = operations.replay(target, request_, timeout_seconds=PLAN_TIMEOUT_SECONDS)
        return render_template("replay_plan.html", selection=selection, report=report)

    @app.post("/replay/start")
    def replay_start() -> Any:
        if request.form.get("confirm") != "yes":
            abort(400, "tick the confirmation box: a replay sets the planned events back to pending")
        execution_arn = operations.begin_replay(target, _request(target, _selection(request.form), dry_run=False))
        return redirect(url_for("replay_watch", execution=execution_arn), code=303)

    @app.get("/replay/progress")
    def replay_watch() -> str:
        execution_arn = _execution(request.args.get("execution"))
        progress = operations.replay_status(target, execution_arn)
        return render_template("replay_progress.html", execution_arn=execution_arn, progress=progress)

    @app.get("/api/replay/progress")
    def replay_progress_json() -> Response:
        progress = operations.replay_status(target, _execution(request.args.get("execution")))
        return app.response_class(json.dumps(progress.to_json(), default=str), mimetype="application/json")


# -------------------------------------------------------------------------------------------- input checking


def _choice(value: str | None, allowed: list[str] | tuple[str, ...]) -> str | None:
    if not value:
        return None
    if value not in allowed:
        abort(400, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _source(value: str | None) -> str | None:
    """A source name from the page's input (any valid name: a source dropped from the declaration still has data)."""
    if not value:
        return None
    problem = definitions.source_name_problem(value)
    if problem:
        abort(400, problem)
    return value


def _source_names(target: Target) -> list[str]:
    """The stack's sources, as the pages offer them: locally the declaration, deployed the stack's own."""
    return [source.name for source in target.sources]


def _moment(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return normalize_time(value)
    except ValueError as error:
        abort(400, str(error))


def _limit(value: str | None) -> int:
    try:
        return max(1, min(int(value or DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE))
    except ValueError:
        abort(400, f"limit {value!r} is not a number")


def _execution(value: str | None) -> str:
    if not value or not value.startswith("arn:") or ":execution:" not in value:
        abort(400, "no Step Functions execution ARN")
    return value


def _selection(form: Any) -> dict[str, Any]:
    """The replay's selection as the form sent it (checked: the same choices `inbox replay` accepts). A link may
    name a provider instead of a source: its default source, as everywhere a single source is asked for."""
    ids = [line.strip() for line in str(form.get("event_ids", "")).replace(",", "\n").splitlines() if line.strip()]
    return {
        "source": _source(form.get("source")) or _choice(form.get("provider"), provider_names()),
        "status": _choice(form.get("status"), REPLAYABLE_STATUSES) or EventStatus.FAILED.value,
        "since": _moment(form.get("since")),
        "until": _moment(form.get("until")),
        "event_ids": ids,
    }


def _request(target: Target, selection: dict[str, Any], *, dry_run: bool) -> ReplayRequest:
    if not selection["source"]:
        abort(400, "choose whose events to replay (a source)")
    source = selection["source"]
    spec = next((spec for spec in target.sources if spec.name == source), None)
    if spec is None and source not in provider_names():
        abort(400, f"{source!r} is not a source of this stack: {', '.join(_source_names(target))}")
    return ReplayRequest(
        provider=spec.provider if spec is not None else source,
        source=source,
        status=selection["status"],
        since=selection["since"],
        until=selection["until"],
        event_ids=tuple(selection["event_ids"]),
        dry_run=dry_run,
    )


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return operations.body_text(value)
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    return "" if value is None else str(value)


def _pretty_json(body: str) -> str | None:
    try:
        return json.dumps(json.loads(body), indent=2, sort_keys=True, ensure_ascii=False)
    except ValueError:
        return None
