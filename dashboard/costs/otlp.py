"""OTLP/HTTP as the agents export it: decoding a request and reading usage out of it.

Bodies are decoded with the official OpenTelemetry protobuf classes (`opentelemetry-proto`),
from protobuf or from JSON (protobuf's own JSON mapping, read first by the reader every agent
input crosses, `core.edge.load_json`), gzipped or not. What is read:

- Claude Code's metrics `claude_code.token.usage` (a counter per token `type`: input, output,
  cacheRead, cacheCreation) and `claude_code.cost.usage` (USD), each point named by its series
  (metric and attributes) and start time, so that a cumulative counter's next export replaces
  the last and a retried delta replaces itself.
- Claude Code's log event `claude_code.api_request` (one per model request, with its tokens and
  cost), named by its session, time and sequence number.
- Codex's log event `codex.sse_event` of kind `response.completed` that carries token counts
  (one per model response; Codex 0.169.0 reports no cost), named by its conversation, time and
  counts. Codex's records have no time of their own, only their observed time.

Every other metric and event is ignored. Points and events say their session in the attribute
`session.id` (Claude Code's own session id, the one its hooks send; Codex's
`conversation.id`) and, where present, their agent in `agent.id`; attributes of the resource
count for each of its points.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from dashboard.core.edge import load_json
from dashboard.core.errors import ServiceError
from dashboard.core.redaction import redact
from dashboard.core.services import ID_PATTERN
from dashboard.models import Client

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

TOKEN_METRIC = "claude_code.token.usage"  # noqa: S105 - a metric's name
COST_METRIC = "claude_code.cost.usage"
# Claude Code's token types -> the fields they count.
TOKEN_TYPES = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cacheRead": "cache_read_tokens",
    "cacheCreation": "cache_creation_tokens",
}
REQUEST_EVENT = "api_request"
# The event's attributes -> the fields they count.
EVENT_TOKENS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_tokens": "cache_read_tokens",
    "cache_creation_tokens": "cache_creation_tokens",
}
CODEX_EVENT = "codex.sse_event"
CODEX_COMPLETED = "response.completed"
SESSION_ATTRIBUTE = "session.id"
CODEX_SESSION_ATTRIBUTE = "conversation.id"
AGENT_ATTRIBUTE = "agent.id"
MODEL_ATTRIBUTE = "model"
MODEL_LENGTH = 200


def client_of(service: str) -> str:
    """The kind of agent a resource's `service.name` names, for sessions first seen here
    ("claude-code"; Codex names its front end: "codex_exec", "codex_cli_rs")."""
    if service == "claude-code":
        return Client.CLAUDE_CODE
    return Client.CODEX if service.startswith("codex") else ""


class BadExport(Exception):
    """The request cannot be read; the message is one sentence saying what to send."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Signal:
    name: str  # "metrics" or "logs"
    request: type[Message]
    response: type[Message]


METRICS = Signal("metrics", ExportMetricsServiceRequest, ExportMetricsServiceResponse)
LOGS = Signal("logs", ExportLogsServiceRequest, ExportLogsServiceResponse)


@dataclass(frozen=True)
class UsageReport:
    """One report of usage as read from an export, before it is stored."""

    session_id: str
    agent_id: str
    stream: str  # `Usage.Stream`
    identity: str
    model: str
    observed_ns: int
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_micros: int = 0


@dataclass(frozen=True)
class Export:
    """What an export request carried: its reports, what was refused and why, its agent."""

    reports: list[UsageReport]
    rejected: int
    rejection: str
    client: str


# --- decoding ------------------------------------------------------------------------------


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def decompress(body: bytes, *, encoding: str, limit: int) -> bytes:
    """The body as sent, gunzipped when it says so; never more than `limit` bytes."""
    encoding = encoding.strip().lower()
    if encoding in {"", "identity"}:
        return body
    if encoding != "gzip":
        raise BadExport(
            f"Content-Encoding {encoding!r} is not supported; send gzip or no encoding.",
            status=415,
        )
    inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise BadExport("The body is not valid gzip; send it compressed whole.") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise BadExport(f"The export is larger than the {limit} bytes accepted.", status=413)
    if not inflater.eof:
        raise BadExport("The body is not valid gzip; send it compressed whole.")
    return data


def parse(signal: Signal, body: bytes, *, content_type: str) -> Message:
    message = signal.request()
    if content_type == PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RuntimeError, ValueError):
            raise BadExport(
                f"The body is not a protobuf OTLP {signal.name} export request."
            ) from None
        return message
    try:
        document = load_json(body, what=f"JSON OTLP {signal.name} export request")
    except ServiceError as error:
        # The reader every agent input crosses; OTLP answers any such refusal with a 400.
        raise BadExport(error.message) from None
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError):
        raise BadExport(f"The body is not a JSON OTLP {signal.name} export request.") from None
    return message


def encode(message: Message, *, content_type: str) -> bytes:
    """A response message in the encoding of its request."""
    if content_type == JSON:
        return json_format.MessageToJson(message, indent=None).encode()
    return message.SerializeToString()


def status_body(message: str, *, status: int, content_type: str) -> bytes:
    """An OTLP error response: a google.rpc.Status with the one sentence."""
    codes = {
        400: code_pb2.INVALID_ARGUMENT,
        401: code_pb2.UNAUTHENTICATED,
        405: code_pb2.UNIMPLEMENTED,
        413: code_pb2.RESOURCE_EXHAUSTED,
        415: code_pb2.INVALID_ARGUMENT,
        503: code_pb2.UNAVAILABLE,
    }
    error = status_pb2.Status(code=codes.get(status, code_pb2.INTERNAL), message=message)
    return encode(error, content_type=content_type)


def success_body(signal: Signal, export: Export, *, content_type: str) -> bytes:
    response = signal.response()
    if export.rejected:
        partial = response.partial_success
        if signal is METRICS:
            partial.rejected_data_points = export.rejected
        else:
            partial.rejected_log_records = export.rejected
        partial.error_message = export.rejection
    return encode(response, content_type=content_type)


# --- reading usage -------------------------------------------------------------------------


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind in {"string_value", "int_value", "double_value", "bool_value"}:
        return getattr(value, kind)
    return None


def _attributes(*lists: Iterable[KeyValue]) -> dict[str, Any]:
    """Attributes of several levels (resource first), the innermost winning."""
    merged: dict[str, Any] = {}
    for attributes in lists:
        for attribute in attributes:
            merged[attribute.key] = _value(attribute.value)
    return merged


def report_identity(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


def _whole(value: Any) -> int:
    """A count as the exporters send it (an int, a double, a string of digits); 0 if none."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    return max(0, round(number)) if number == number and abs(number) < 2**62 else 0


def _micros(dollars: Any) -> int:
    try:
        number = float(dollars)
    except (TypeError, ValueError):
        return 0
    return max(0, round(number * 1_000_000)) if number == number and abs(number) < 2**42 else 0


class _Reader:
    def __init__(self) -> None:
        self.reports: list[UsageReport] = []
        self.rejected = 0
        self.rejection = ""
        self.client = ""

    def resource(self, attributes: dict[str, Any]) -> None:
        if not self.client:
            self.client = client_of(str(attributes.get("service.name", "")))

    def place(self, attributes: dict[str, Any]) -> tuple[str, str] | None:
        """(session id, agent id) of a point or event; None (and counted) when it has none."""
        session_id = attributes.get(SESSION_ATTRIBUTE) or attributes.get(CODEX_SESSION_ATTRIBUTE)
        agent_id = attributes.get(AGENT_ATTRIBUTE) or session_id
        if not isinstance(session_id, str) or not ID_PATTERN.fullmatch(session_id):
            self.refuse(f"A usage report has no valid '{SESSION_ATTRIBUTE}' attribute.")
            return None
        if not isinstance(agent_id, str) or not ID_PATTERN.fullmatch(agent_id):
            agent_id = session_id
        return session_id, agent_id

    def refuse(self, why: str) -> None:
        self.rejected += 1
        self.rejection = self.rejection or why

    def export(self) -> Export:
        return Export(self.reports, self.rejected, self.rejection, self.client)


def model_name(value: object) -> str:
    """A model's name as stored: the agent's text, redacted like every text it sends."""
    return redact(str(value or ""))[:MODEL_LENGTH]


def _model(attributes: dict[str, Any]) -> str:
    return model_name(attributes.get(MODEL_ATTRIBUTE))


def metrics_usage(request: ExportMetricsServiceRequest) -> Export:
    reader = _Reader()
    for resource_metrics in request.resource_metrics:
        resource = _attributes(resource_metrics.resource.attributes)
        reader.resource(resource)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name not in {TOKEN_METRIC, COST_METRIC}:
                    continue
                if metric.WhichOneof("data") != "sum":
                    continue
                for point in metric.sum.data_points:
                    report = _point_report(reader, metric.name, resource, point)
                    if report is not None:
                        reader.reports.append(report)
    return reader.export()


def _point_report(
    reader: _Reader, name: str, resource: dict[str, Any], point: Any
) -> UsageReport | None:
    attributes = _attributes(point.attributes)
    every = {**resource, **attributes}
    placed = reader.place(every)
    if placed is None:
        return None
    value = point.as_double if point.WhichOneof("value") == "as_double" else point.as_int
    series = sorted(f"{key}={value!r}" for key, value in attributes.items())
    fields: dict[str, int] = {}
    if name == COST_METRIC:
        fields["cost_micros"] = _micros(value)
    else:
        field = TOKEN_TYPES.get(str(attributes.get("type", "")))
        if field is None:
            return None
        fields[field] = _whole(value)
    return UsageReport(
        session_id=placed[0],
        agent_id=placed[1],
        stream="metrics",
        identity=report_identity(name, *series, point.start_time_unix_nano),
        model=_model(every),
        observed_ns=point.time_unix_nano,
        **fields,
    )


def logs_usage(request: ExportLogsServiceRequest) -> Export:
    reader = _Reader()
    for resource_logs in request.resource_logs:
        resource = _attributes(resource_logs.resource.attributes)
        reader.resource(resource)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                attributes = _attributes(record.attributes)
                name = attributes.get("event.name")
                codex = (
                    name == CODEX_EVENT
                    and attributes.get("event.kind") == CODEX_COMPLETED
                    and "input_token_count" in attributes
                )
                if name != REQUEST_EVENT and not codex:
                    continue
                every = {**resource, **attributes}
                placed = reader.place(every)
                if placed is None:
                    continue
                report = _codex_report if codex else _event_report
                # Codex stamps only when its SDK saw the event (OTLP's rule: the record's
                # time, else the time it was observed); without either a report counts in no
                # day, week or month, nor any budget's period.
                when = record.time_unix_nano or record.observed_time_unix_nano
                reader.reports.append(report(placed, every, when))
    return reader.export()


def _event_report(placed: tuple[str, str], attributes: dict[str, Any], time_ns: int) -> UsageReport:
    tokens = {field: _whole(attributes.get(name)) for name, field in EVENT_TOKENS.items()}
    micros = attributes.get("cost_usd_micros")
    cost = _whole(micros) if micros is not None else _micros(attributes.get("cost_usd"))
    return UsageReport(
        session_id=placed[0],
        agent_id=placed[1],
        stream="events",
        # A retried batch sends the same event again: the same time, sequence and request.
        identity=report_identity(
            REQUEST_EVENT,
            attributes.get("event.timestamp", time_ns),
            attributes.get("event.sequence", ""),
            attributes.get("request_id", ""),
        ),
        model=_model(attributes),
        observed_ns=time_ns,
        cost_micros=cost,
        **tokens,
    )


def _codex_report(placed: tuple[str, str], attributes: dict[str, Any], time_ns: int) -> UsageReport:
    """A Codex model response: its input count includes the cached part, its output count
    the reasoning."""
    counts = {
        name: _whole(attributes.get(f"{name}_token_count"))
        for name in ("input", "output", "cached", "cache_write")
    }
    return UsageReport(
        session_id=placed[0],
        agent_id=placed[1],
        stream="events",
        # Codex numbers neither its events nor its responses: a response is its time and counts.
        identity=report_identity(
            CODEX_EVENT, attributes.get("event.timestamp", time_ns), *counts.values()
        ),
        model=_model(attributes),
        observed_ns=time_ns,
        input_tokens=max(0, counts["input"] - counts["cached"]),
        output_tokens=counts["output"],
        cache_read_tokens=counts["cached"],
        cache_creation_tokens=counts["cache_write"],
    )


def read_usage(signal: Signal, message: Message) -> Export:
    if signal is METRICS:
        return metrics_usage(message)  # type: ignore[arg-type]
    return logs_usage(message)  # type: ignore[arg-type]
