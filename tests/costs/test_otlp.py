"""The OTLP receiver: what Claude Code exports becomes each session's tokens and cost."""

from __future__ import annotations

import gzip

import pytest
from django.utils import timezone
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)

from dashboard.core.services import forget_cached_tokens
from dashboard.costs.models import Usage
from dashboard.costs.selectors import SessionUsage, usage_by_session
from dashboard.models import Agent, AgentToken, Client, Session
from tests.conftest import todo, write_todos
from tests.costs.conftest import (
    SESSION,
    START,
    as_json,
    attributes,
    request_events,
    usage_metrics,
)


def usage(session_id: str = SESSION) -> SessionUsage | None:
    session = Session.objects.filter(session_id=session_id).first()
    if session is None:
        return None
    return usage_by_session([session.pk]).get(session.pk)


def test_it_stores_the_token_and_cost_counters_of_a_session(export):
    response = export("/v1/metrics", usage_metrics(tokens={"input": 200, "output": 20}))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-protobuf"
    assert ExportMetricsServiceResponse.FromString(response.content).partial_success.ByteSize() == 0
    got = usage()
    assert (got.input_tokens, got.output_tokens, got.cost_micros) == (200, 20, 1200)
    assert got.cost_text == "$0.0012"
    assert not got.estimated


def test_it_reads_json_and_gzip_alike(export):
    tokens = {"input": 100, "output": 10, "cacheRead": 5, "cacheCreation": 7}
    response = export("/v1/metrics", usage_metrics(tokens=tokens), encoding="json", gzipped=True)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert json_format.Parse(response.content, ExportMetricsServiceResponse()) is not None
    got = usage()
    assert (got.input_tokens, got.cache_read_tokens, got.cache_creation_tokens) == (100, 5, 7)


def test_a_retried_export_counts_once(export):
    message = usage_metrics(tokens={"input": 200, "output": 20})
    for _ in range(3):
        assert export("/v1/metrics", message).status_code == 200

    assert usage().input_tokens == 200
    assert usage().cost_micros == 1200


def test_delta_exports_add_up(export):
    export(
        "/v1/metrics", usage_metrics(tokens={"input": 100}, cost=0.5, start=START, end=START + 5)
    )
    export(
        "/v1/metrics",
        usage_metrics(tokens={"input": 40}, cost=0.25, start=START + 5, end=START + 9),
    )

    assert (usage().input_tokens, usage().cost_text) == (140, "$0.75")


def test_a_cumulative_counter_keeps_its_latest_value_whatever_the_order(export):
    later = usage_metrics(tokens={"input": 300}, cost=3.0, end=START + 20, cumulative=True)
    earlier = usage_metrics(tokens={"input": 100}, cost=1.0, end=START + 10, cumulative=True)
    export("/v1/metrics", later)
    export("/v1/metrics", earlier)  # a late retry of an older export

    assert (usage().input_tokens, usage().cost_text) == (300, "$3.00")


def test_request_events_give_the_figures_of_a_session_without_metrics(export):
    events = request_events(
        {"input_tokens": 100, "output_tokens": 10, "cost_usd_micros": 600},
        {"input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 50, "cost_usd": 0.0009},
    )
    assert export("/v1/logs", events).status_code == 200
    assert export("/v1/logs", events, encoding="json").status_code == 200  # a retry, as JSON

    got = usage()
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens) == (220, 40, 50)
    assert got.cost_micros == 1500


def test_a_session_reporting_both_streams_is_not_counted_twice(export):
    export("/v1/metrics", usage_metrics(tokens={"input": 200, "output": 20}, cost=0.0012))
    export(
        "/v1/logs",
        request_events(
            {"input_tokens": 100, "output_tokens": 10, "cost_usd_micros": 600},
            {"input_tokens": 100, "output_tokens": 10, "cost_usd_micros": 600},
        ),
    )

    assert (usage().input_tokens, usage().cost_micros) == (200, 1200)


def test_a_session_first_seen_here_is_created_as_hooks_create_it(export, user):
    export("/v1/metrics", usage_metrics())

    session = Session.objects.get(session_id=SESSION)
    assert session.owner == user
    assert session.client == Client.CLAUDE_CODE
    assert Agent.objects.filter(session=session, agent_id=SESSION).exists()


def test_usage_goes_to_the_session_its_hooks_reported(export, user):
    write_todos(user, SESSION, SESSION, [todo("Run the tests", "in_progress")])

    export("/v1/metrics", usage_metrics())

    assert Session.objects.count() == 1
    assert usage().input_tokens == 200


def test_unknown_metrics_and_events_are_ignored(export):
    message = usage_metrics(tokens={})
    message.resource_metrics[0].scope_metrics[0].metrics.pop()  # only session.count is left
    message.resource_metrics[0].scope_metrics[0].metrics.pop()

    assert export("/v1/metrics", message).status_code == 200
    assert export("/v1/logs", request_events()).status_code == 200
    assert not Usage.objects.exists()


def test_a_point_without_a_session_is_refused_in_the_answer_and_the_rest_stored(export):
    message = usage_metrics()
    message.MergeFrom(usage_metrics(session_id="not a session id!"))

    response = export("/v1/metrics", message)

    answer = ExportMetricsServiceResponse.FromString(response.content)
    assert response.status_code == 200
    assert answer.partial_success.rejected_data_points == 3
    assert "session.id" in answer.partial_success.error_message
    assert usage().input_tokens == 200


def test_usage_of_another_users_session_is_refused(export, other_user):
    write_todos(other_user, SESSION, SESSION, [todo("Theirs")])

    response = export("/v1/metrics", usage_metrics())

    answer = ExportMetricsServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_data_points == 3
    assert not Usage.objects.exists()


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (b"\xff\xff\xff\xff", "protobuf"),
        (b'{"resourceMetrics": [{"resource": 7}]}', "json"),
        (b"not json at all", "json"),
    ],
    ids=["protobuf", "json-shape", "json-syntax"],
)
def test_a_malformed_body_gets_the_otlp_error_status_and_changes_nothing(export, body, encoding):
    response = export("/v1/metrics", body=body, encoding=encoding)

    assert response.status_code == 400
    if encoding == "json":
        status = json_format.Parse(response.content, status_pb2.Status())
    else:
        status = status_pb2.Status.FromString(response.content)
    assert status.code == 3  # INVALID_ARGUMENT
    assert status.message.endswith(".")
    assert not Session.objects.exists()


def test_a_broken_gzip_body_is_refused(client, token):
    response = client.post(
        "/v1/metrics",
        data=gzip.compress(usage_metrics().SerializeToString())[:-12],
        content_type="application/x-protobuf",
        headers={"Authorization": f"Bearer {token}", "Content-Encoding": "gzip"},
    )

    assert response.status_code == 400
    assert "gzip" in status_pb2.Status.FromString(response.content).message
    assert not Session.objects.exists()


@pytest.mark.parametrize("auth", ["", "Bearer ab_not-a-token", "Basic abc"])
def test_a_missing_or_wrong_token_is_refused(export, auth):
    response = export("/v1/metrics", usage_metrics(), auth=auth)

    assert response.status_code == 401
    assert "agent token" in status_pb2.Status.FromString(response.content).message
    assert not Session.objects.exists()


def test_a_revoked_token_is_refused(export, token, user):
    AgentToken.objects.filter(owner=user).update(revoked_at=timezone.now())
    forget_cached_tokens()

    assert export("/v1/metrics", usage_metrics()).status_code == 401


def test_an_oversize_export_is_refused(export, settings):
    settings.AGENTBOARD_OTLP_MAX_BYTES = 200
    big = usage_metrics()

    response = export("/v1/metrics", big)
    zipped_bomb = export("/v1/metrics", body=b"\0" * 10_000, gzipped=True)

    assert response.status_code == 413
    assert zipped_bomb.status_code == 413
    assert "200 bytes" in status_pb2.Status.FromString(response.content).message
    assert not Session.objects.exists()


def test_other_content_types_and_methods_are_refused(client, token):
    headers = {"Authorization": f"Bearer {token}"}
    text = client.post("/v1/metrics", data=b"x", content_type="text/plain", headers=headers)
    got = client.get("/v1/logs", headers=headers)
    deflated = client.post(
        "/v1/logs",
        data=b"x",
        content_type="application/x-protobuf",
        headers={**headers, "Content-Encoding": "br"},
    )

    assert (text.status_code, got.status_code, deflated.status_code) == (415, 405, 415)


def test_json_answers_speak_json(export):
    response = export("/v1/logs", body=as_json(request_events())[:-3], encoding="json")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "JSON OTLP logs" in json_format.Parse(response.content, status_pb2.Status()).message


def test_a_secret_in_a_model_name_is_never_stored(export):
    message = usage_metrics()
    point = message.resource_metrics[0].scope_metrics[0].metrics[1].sum.data_points[0]
    for attribute in point.attributes:
        if attribute.key == "model":
            attribute.value.string_value = "AKIAIOSFODNN7EXAMPLE"

    export("/v1/metrics", message)

    assert set(Usage.objects.values_list("model", flat=True)) == {
        "claude-opus-5-5",
        "[redacted:aws-key]",
    }


def codex_events(*counts: dict[str, int], conversation: str = SESSION):
    """Codex 0.169.0's export of one turn (recorded from the real CLI): its `codex.sse_event`s,
    of which the last `response.completed` carries the token counts, among others. Its records
    have no `time_unix_nano`, only the time its SDK observed them."""
    export = ExportLogsServiceRequest()
    resource = export.resource_logs.add()
    resource.resource.attributes.extend(attributes(service__name="codex_exec"))
    records = resource.scope_logs.add().log_records
    common = {"conversation__id": conversation, "model": "scripted-model"}
    for number, figures in enumerate(counts):
        stamp = f"2026-11-26T11:37:07.{number:03d}Z"
        bare = records.add(observed_time_unix_nano=START + number)
        bare.attributes.extend(
            attributes(
                event__name="codex.sse_event",
                event__kind="response.completed",
                event__timestamp=stamp,
                **common,
            )
        )
        counted = records.add(observed_time_unix_nano=START + number)
        counted.attributes.extend(
            attributes(
                event__name="codex.sse_event",
                event__kind="response.completed",
                event__timestamp=stamp,
                **common,
                **{f"{name}_token_count": value for name, value in figures.items()},
            )
        )
    return export


def test_codex_responses_give_its_tokens_and_no_cost(export):
    first = {"input": 1000, "output": 50, "cached": 400, "reasoning": 20}
    events = codex_events(first, {"input": 10, "output": 5, "cached": 0})

    assert export("/v1/logs", events).status_code == 200
    assert export("/v1/logs", events).status_code == 200  # a retry

    got = usage()
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens) == (610, 55, 400)
    assert got.cost_micros == 0
    assert Session.objects.get(session_id=SESSION).client == Client.CODEX


def test_a_codex_response_counts_when_codex_observed_it(export):
    """Its records carry only their observed time: by it a response counts in its day (the
    cost panels' and the budgets' periods)."""
    assert export("/v1/logs", codex_events({"input": 10}, {"input": 20})).status_code == 200

    assert sorted(Usage.objects.values_list("observed_ns", flat=True)) == [START, START + 1]
