"""OTLP exports shaped as Claude Code 2.1.197 and 2.1.330 send them (recorded from the real CLI:
resource `service.name` "claude-code"; each point's and event's `session.id`, `model`, and for
tokens `type`), built with the official protobuf classes."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality

SESSION = "0b5e2c61-3f4e-4c8a-9d55-2a7f1e9b7c10"
MODEL = "claude-opus-5-5"
START = 1_795_690_876_122_000_000


def attributes(**values: Any) -> list[KeyValue]:
    pairs = []
    for key, value in values.items():
        key = key.replace("__", ".")
        if isinstance(value, bool):
            any_value = AnyValue(bool_value=value)
        elif isinstance(value, int):
            any_value = AnyValue(int_value=value)
        elif isinstance(value, float):
            any_value = AnyValue(double_value=value)
        else:
            any_value = AnyValue(string_value=value)
        pairs.append(KeyValue(key=key, value=any_value))
    return pairs


def usage_metrics(
    *,
    session_id: str = SESSION,
    tokens: dict[str, int] | None = None,
    cost: float = 0.0012,
    start: int = START,
    end: int = START + 1_000_000_000,
    cumulative: bool = False,
    extra_metric: bool = True,
) -> ExportMetricsServiceRequest:
    """One export of the cost and token counters for one session and model."""
    tokens = tokens if tokens is not None else {"input": 200, "output": 20}
    temporality = (
        AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
        if cumulative
        else AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
    )
    request = ExportMetricsServiceRequest()
    resource = request.resource_metrics.add()
    resource.resource.attributes.extend(
        attributes(service__name="claude-code", service__version="2.1.330")
    )
    scope = resource.scope_metrics.add()
    scope.scope.name = "com.anthropic.claude_code"
    common = {"session__id": session_id, "terminal__type": "non-interactive", "model": MODEL}
    if extra_metric:
        count = scope.metrics.add(name="claude_code.session.count")
        count.sum.aggregation_temporality = temporality
        point = count.sum.data_points.add(start_time_unix_nano=start, time_unix_nano=end)
        point.as_double = 1.0
        point.attributes.extend(attributes(session__id=session_id))
    cost_metric = scope.metrics.add(name="claude_code.cost.usage", unit="USD")
    cost_metric.sum.aggregation_temporality = temporality
    point = cost_metric.sum.data_points.add(start_time_unix_nano=start, time_unix_nano=end)
    point.as_double = cost
    point.attributes.extend(attributes(**common, query_source="main"))
    token_metric = scope.metrics.add(name="claude_code.token.usage", unit="tokens")
    token_metric.sum.aggregation_temporality = temporality
    for kind, value in tokens.items():
        point = token_metric.sum.data_points.add(start_time_unix_nano=start, time_unix_nano=end)
        point.as_double = float(value)
        point.attributes.extend(attributes(**common, query_source="main", type=kind))
    return request


def request_events(
    *requests: dict[str, Any], session_id: str = SESSION, first: int = 1
) -> ExportLogsServiceRequest:
    """`claude_code.api_request` events, one per model request (with its tokens and cost),
    among other events; their sequence numbers start at `first`."""
    export = ExportLogsServiceRequest()
    resource = export.resource_logs.add()
    resource.resource.attributes.extend(attributes(service__name="claude-code"))
    scope = resource.scope_logs.add()
    scope.scope.name = "com.anthropic.claude_code.events"
    prompt = scope.log_records.add(time_unix_nano=START)
    prompt.body.string_value = "claude_code.user_prompt"
    prompt.attributes.extend(
        attributes(session__id=session_id, event__name="user_prompt", prompt_length="12")
    )
    for sequence, figures in enumerate(requests, start=first):
        record = scope.log_records.add(time_unix_nano=START + sequence)
        record.body.string_value = "claude_code.api_request"
        record.attributes.extend(
            attributes(
                session__id=session_id,
                event__name="api_request",
                event__timestamp=f"2026-11-26T11:05:56.{sequence % 1000:03d}Z",
                event__sequence=sequence,
                model=MODEL,
                request_id=f"req_{sequence:04d}",
                **{name: str(value) for name, value in figures.items()},
            )
        )
    return export


def as_json(message) -> bytes:
    return json_format.MessageToJson(message).encode()


@pytest.fixture
def export(client, token):
    """POST an export to the receiver as an OTLP/HTTP exporter does."""

    def post(
        path: str,
        message=None,
        *,
        body: bytes | None = None,
        encoding: str = "protobuf",
        gzipped: bool = False,
        auth: str | None = None,
    ):
        if body is None:
            body = as_json(message) if encoding == "json" else message.SerializeToString()
        content_type = "application/json" if encoding == "json" else "application/x-protobuf"
        headers = {"Authorization": auth if auth is not None else f"Bearer {token}"}
        if gzipped:
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        return client.post(path, data=body, content_type=content_type, headers=headers)

    return post
