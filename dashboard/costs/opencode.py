"""`POST /hooks/opencode/usage`: what each assistant message of opencode cost.

opencode's `message.updated` events carry an assistant message's tokens and cost; the Agentboard
plugin sends them here once the message is complete. A message sent again (the plugin restarted,
a retry) replaces itself: its id is its identity.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, JsonResponse
from pydantic import Field, NonNegativeFloat, NonNegativeInt

from dashboard.core.changes import Outcome
from dashboard.core.gates import tool_gated
from dashboard.core.services import known_agent
from dashboard.core.writer import write
from dashboard.costs.otlp import MODEL_LENGTH, UsageReport, model_name, report_identity
from dashboard.costs.services import usage_store
from dashboard.integrations.claude_code.hooks import agent_endpoint, read_payload, validate
from dashboard.integrations.opencode.schemas import Lenient, RequestId, SessionId
from dashboard.integrations.opencode.views import opencode_place
from dashboard.models import Client, Session

MAX_TOKENS = 2**53


class CacheTokens(Lenient):
    read: NonNegativeInt = Field(default=0, le=MAX_TOKENS)
    write: NonNegativeInt = Field(default=0, le=MAX_TOKENS)


class Tokens(Lenient):
    input: NonNegativeInt = Field(default=0, le=MAX_TOKENS)
    output: NonNegativeInt = Field(default=0, le=MAX_TOKENS)
    # Reasoning is billed as output.
    reasoning: NonNegativeInt = Field(default=0, le=MAX_TOKENS)
    cache: CacheTokens = CacheTokens()


class MessageUsage(Lenient):
    """One complete assistant message: opencode's `info` of its `message.updated` event."""

    sessionID: SessionId
    id: RequestId
    modelID: str = Field(default="", max_length=MODEL_LENGTH)
    cost: NonNegativeFloat = Field(default=0, le=1_000_000)
    tokens: Tokens = Tokens()
    # When it completed, in milliseconds since the epoch.
    completed: NonNegativeInt = Field(default=0, le=2**53)


@agent_endpoint("Send opencode message usage with POST.")
async def opencode_usage(request: HttpRequest, owner: AbstractBaseUser) -> JsonResponse:
    message = validate(
        MessageUsage,
        read_payload(
            request,
            what="opencode message usage",
            shape="Send an assistant message's info as a JSON object.",
        ),
    )
    refused, gated = (await write(_store, owner=owner, message=message)).value
    if refused:
        return JsonResponse(
            {
                "error": {
                    "code": "session_forbidden",
                    "message": "This session was reported with another user's token; use "
                    "that user's token for it.",
                    "detail": [],
                }
            },
            status=403,
        )
    # A session whose budget is spent: the plugin asks before each of its tool calls.
    return JsonResponse({"gated": True} if gated else {})


def _store(*, owner: AbstractBaseUser, message: MessageUsage) -> Outcome[tuple[int, bool]]:
    """How many reports were refused (0 or 1), and whether the session's tool calls are gated
    now."""
    session_id, agent_id = opencode_place(owner=owner, opencode_id=message.sessionID)
    tokens = message.tokens
    report = UsageReport(
        session_id=session_id,
        agent_id=agent_id,
        stream="events",
        identity=report_identity("opencode", message.id),
        model=model_name(message.modelID),
        observed_ns=message.completed * 1_000_000,
        input_tokens=tokens.input,
        output_tokens=tokens.output + tokens.reasoning,
        cache_read_tokens=tokens.cache.read,
        cache_creation_tokens=tokens.cache.write,
        cost_micros=round(message.cost * 1_000_000),
    )
    stored = usage_store(owner=owner, reports=[report], client=Client.OPENCODE)
    if stored.value:
        return Outcome((stored.value, False), stored.changes)
    known = known_agent(owner=owner, session_id=session_id, agent_id=agent_id)
    session_pk = (
        known[1] if known is not None
        else Session.objects.filter(owner=owner, session_id=session_id)
        .values_list("pk", flat=True).first()
    )  # fmt: skip
    return Outcome((0, session_pk is not None and tool_gated(session_pk)), stored.changes)
