"""The published OpenAPI schema and the validation agree ("publish what you accept"):
schemathesis derives requests from /api/v1/openapi.json, valid and invalid, and calls the real
ASGI application in-process. No server error, no response outside the schema, no request the
schema calls valid refused, no request it calls invalid accepted, and no server traceback."""

from __future__ import annotations

import re
import sys

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from dashboard.asgi import application
from dashboard.core.edge import NON_BLANK_PATTERN, SPACE_CLASS, TEXT_PATTERN
from dashboard.models import AgentToken, hash_token
from tests.hardening.conftest import errors_in

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(300)]

# Examples generated per operation, after schemathesis' own boundary cases: enough to find
# every disagreement this schema had, quick enough for the suite (about half a minute).
EXAMPLES = 60

# The agent token schemathesis sends as the schema's bearer scheme (and leaves out when it
# checks that a request without it is refused).
TOKEN = "ab_schema-driven-agent"

CONFIG = SchemathesisConfig.from_dict(
    {
        "auth": {"openapi": {"BearerToken": {"bearer": TOKEN}}},
        "checks": {
            # A body over a documented size limit (a plan's maxLength) gets the documented 413.
            "negative_data_rejection": {
                "expected-statuses": [400, 401, 403, 404, 405, 409, 413, 422],
            }
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
