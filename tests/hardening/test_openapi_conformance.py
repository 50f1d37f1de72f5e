"""The published OpenAPI schema and the validation agree ("publish what you accept"):
schemathesis derives requests from /api/v1/openapi.json, valid and invalid, and calls the real
ASGI application in-process. No server error, no response outside the schema, no request the
schema calls valid refused, no request it calls invalid accepted, and no server traceback."""

from __future__ import annotations

import re
import sys

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig

from dashboard.asgi import application
from dashboard.core.edge import NON_BLANK_PATTERN, SPACE_CLASS, TEXT_PATTERN
from dashboard.core.errors import ServiceError
from dashboard.models import AgentToken, hash_token
from dashboard.steering.services import checked_text
from tests.hardening.conftest import errors_in

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(300)]

# Examples generated per operation, after schemathesis' own boundary cases: enough to find
# every disagreement this schema had, quick enough for the suite (under a minute).
EXAMPLES = 15

# The agent token schemathesis sends as the schema's bearer scheme (and leaves out when it
# checks that a request without it is refused).
TOKEN = "ab_schema-driven-agent"

CONFIG = SchemathesisConfig.from_dict(
    {
        "auth": {"openapi": {"BearerToken": {"bearer": TOKEN}}},
        "checks": {
            # Named to say they run for every operation: what the schema allows is not refused
            # as invalid (400, 422), and what it forbids is refused.
            "positive_data_acceptance": {"enabled": True},
            # A body over a documented size limit (a plan's maxLength) gets the documented 413.
            "negative_data_rejection": {
                "enabled": True,
                "expected-statuses": [400, 401, 403, 404, 405, 409, 413, 422],
            },
        },
    }
)


@pytest.fixture
def agent(user) -> AgentToken:
    return AgentToken.objects.create(
        owner=user, label="schemathesis", key_hash=hash_token(TOKEN), hint=TOKEN[:10]
    )


# Loaded as agents load it, from the application (at collection, before the test environment
# allows Django's test host name).
schema = schemathesis.openapi.from_asgi(
    "/api/v1/openapi.json", application, config=CONFIG, headers={"Host": "localhost"}
)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_the_api_answers_as_its_schema_says(case, agent, server_errors):
    case.call_and_validate()

    assert errors_in(server_errors) == []


def test_the_published_text_patterns_say_what_the_validators_check():
    """The patterns spell whitespace out for every regex engine; it must be what
    `str.strip()` strips, or the schema and the validators would drift apart."""
    every_character = (chr(code) for code in range(sys.maxunicode + 1))
    text = [c for c in every_character if not "\ud800" <= c <= "\udfff"]

    assert {c for c in text if re.fullmatch(f"[{SPACE_CLASS}]", c)} == {
        c for c in text if c.isspace()
    }
    for value in ["", " ", "\u3000\t", "a", " a ", "a\u0000", "\u0000"]:
        accepted = bool(value.strip()) and "\u0000" not in value
        assert bool(re.fullmatch(NON_BLANK_PATTERN, value)) is accepted
        assert bool(re.fullmatch(TEXT_PATTERN, value)) is ("\u0000" not in value)


def test_the_schema_says_a_plan_of_whitespace_is_refused_as_the_service_does(agent_api):
    """Found by schemathesis: a plan of a form feed was schema-valid, and refused."""
    plan = agent_api.get("/api/v1/openapi.json").json()["components"]["schemas"]["PlanSubmitIn"]
    blank = plan["properties"]["plan"]["not"]["pattern"]

    for text in ["\f", " \t\n", "\u3000"]:
        assert re.fullmatch(blank.removeprefix("^").removesuffix("$"), text)
        response = agent_api.post("/api/v1/sessions/s/agents/s/plans", {"plan": text})
        assert response.json()["error"]["code"] == "empty_plan"
    assert not re.fullmatch(blank.removeprefix("^").removesuffix("$"), " # Plan ")


def test_every_router_of_the_api_is_in_the_run():
    tags = {tag for operation in schema.get_all_operations() for tag in operation.ok().tags or []}

    assert {"todos", "plans", "activity", "steering", "search", "agents"} <= tags


@pytest.fixture
def steps_url(agent_api) -> str:
    for n in range(3):
        body = {"tool_use_id": f"c{n}", "tool_name": "Bash", "status": "ok"}
        agent_api.post("/api/v1/sessions/s/agents/s/steps", body)
    return "/api/v1/sessions/s/activity"


def published_parameter(agent_api, path: str, name: str) -> dict:
    operation = agent_api.get("/api/v1/openapi.json").json()["paths"][path]["get"]
    [parameter] = [p for p in operation["parameters"] if p["name"] == name]
    return parameter["schema"]["anyOf"][0]


def test_the_activity_takes_every_cursor_its_schema_allows(agent_api, steps_url):
    cursor = published_parameter(agent_api, "/api/v1/sessions/{session_id}/activity", "after")
    first = agent_api.get(f"{steps_url}?limit=1").json()["next_cursor"]
    assert re.fullmatch(cursor["pattern"], first)

    @given(st.from_regex(cursor["pattern"], fullmatch=True))
    @settings(max_examples=40, deadline=None, derandomize=True)
    def answered(after: str) -> None:
        assert len(after) <= cursor["maxLength"]
        assert agent_api.get(f"{steps_url}?after={after}").status_code == 200

    answered()
    for refused in ["nonsense", "MjAyNi0xMS0wMVQwMDowMDowMHwx", "1.", ".1", "1.2.3", "1" * 40]:
        response = agent_api.get(f"{steps_url}?after={refused}")
        assert re.fullmatch(cursor["pattern"], refused) is None
        assert response.json()["error"]["code"] == "invalid_cursor"


def test_search_takes_exactly_the_days_its_schema_calls_dates(agent_api):
    day = published_parameter(agent_api, "/api/v1/search", "since")
    for name in ["since", "until"]:
        for value in ["2026-11-01", "0001-01-01", "9999-12-31"]:
            assert re.fullmatch(day["pattern"], value)
            assert agent_api.get(f"/api/v1/search?q=x&{name}={value}").status_code == 200
        for value in ["0", "86400", "20261101", "2026-11-01T00:00:00", "2026-1-1", "2026-02-30"]:
            response = agent_api.get(f"/api/v1/search?q=x&{name}={value}")
            assert response.status_code == 422
            assert response.json()["error"]["detail"][0]["loc"] == ["query", name]


@pytest.mark.parametrize("body, field", [("MessageIn", "text"), ("ReasonIn", "reason")])
def test_the_steering_text_patterns_say_what_the_service_accepts(agent_api, body, field):
    published = agent_api.get("/api/v1/openapi.json").json()["components"]["schemas"][body]
    pattern = published["properties"][field]["pattern"]
    # Controls, whitespace of every kind, and ordinary letters, in any order.
    characters = st.sampled_from("\x00\x01\x08\t\n\x0b\x0c\r\x1c\x1f \x7f\x85\xa0\u2028\u3000ab")

    @given(st.text(characters, max_size=8))
    @settings(max_examples=400, deadline=None, derandomize=True)
    def agrees(text: str) -> None:
        try:
            checked_text(text, what=field, required=body == "MessageIn")
            accepted = True
        except ServiceError:
            accepted = False
        assert bool(re.fullmatch(pattern, text)) is accepted, repr(text)

    agrees()
