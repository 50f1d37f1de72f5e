from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.activity.models import Concern, Step
from dashboard.activity.services import steps_store
from dashboard.activity.summaries import step_draft
from dashboard.core.changes import Changes, Outcome
from dashboard.core.errors import ServiceError
from dashboard.core.writer import Writer, _Job
from dashboard.integrations.claude_code import hooks
from dashboard.integrations.claude_code.schemas import HookInput
from dashboard.models import Agent
from planmode.models import PermissionRequest, Plan
from tests.activity.conftest import SESSION_ID, load_fixture, tool_event
from tests.core.corpus import SECRETS

pytestmark = pytest.mark.django_db

CODEX_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"


def steps() -> list[Step]:
    return list(Step.objects.order_by("started_at", "pk"))


def test_a_tool_call_is_one_step_from_its_start_to_its_end(hook):
    hook(load_fixture("session_start.json"))
    assert hook(tool_event("PreToolUse", "toolu_1")).json() == {}

    (running,) = steps()
    assert running.outcome == "running"
    assert running.summary == "npm run test -- --watch=false"
    assert running.detail == "Run the unit tests once"
    assert running.ended_at is None
    assert running.agent.agent_id == SESSION_ID

    hook(tool_event("PostToolUse", "toolu_1", tool_response={"stdout": "ok"}))

    (done,) = steps()
    assert done.pk == running.pk
    assert done.outcome == "ok"
    assert done.started_at == running.started_at
    assert done.ended_at >= done.started_at


def test_an_end_reported_without_a_start_is_a_step_that_starts_when_it_ends(hook):
    hook(tool_event("PostToolUse", "toolu_2"))

    (step,) = steps()
    assert step.outcome == "ok"
    assert step.started_at == step.ended_at


def test_a_failed_call_keeps_the_first_line_of_its_error(hook):
    hook(tool_event("PreToolUse", "toolu_3"))
    hook(tool_event("PostToolUseFailure", "toolu_3", error="Exit code 1\nFAILED tests/api"))

    (step,) = steps()
    assert (step.outcome, step.error) == ("failed", "Exit code 1")


def test_a_call_the_user_interrupted_reads_interrupted(hook):
    hook(tool_event("PreToolUse", "toolu_4"))
    hook(tool_event("PostToolUseFailure", "toolu_4", error="Interrupted", is_interrupt=True))

    assert steps()[0].outcome == "interrupted"


def test_a_denied_call_reads_denied(hook):
    hook(tool_event("PreToolUse", "toolu_5"))
    hook(tool_event("PermissionDenied", "toolu_5", reason="Blocked by the auto mode classifier"))

    assert steps()[0].outcome == "denied"


def test_a_call_still_running_when_the_agent_stops_was_interrupted(hook):
    hook(tool_event("PreToolUse", "toolu_6"))
    hook(load_fixture("stop.json"))

    (step,) = steps()
    assert step.outcome == "interrupted"
    assert step.ended_at is not None


def test_a_subagents_calls_are_its_own_steps(hook):
    hook(load_fixture("session_start.json"))
    sub = load_fixture("subagent_start.json")
    hook(sub)
    hook(tool_event("PreToolUse", "toolu_7", agent_id=sub["agent_id"], agent_type="Explore"))

    assert steps()[0].agent.agent_id == sub["agent_id"]


def test_a_todowrite_is_a_step_too(hook):
    hook(load_fixture("post_tool_use_todowrite.json"))

    (step,) = steps()
    assert step.tool_name == "TodoWrite"
    assert step.outcome == "ok"
    assert step.detail.endswith("items")


def test_a_permission_request_is_what_its_running_step_waited_on(hook, settings):
    settings.AGENTBOARD_PERMISSION_HOOK_WAIT_SECONDS = 0.05
    hook(tool_event("PreToolUse", "toolu_8", tool_name="Edit", tool_input={"file_path": "/a"}))
    hook(load_fixture("permission_request_edit.json"))

    request = PermissionRequest.objects.get()
    assert steps()[0].waited_on == f"permission:{request.pk}"


def test_a_codex_command_is_a_step(agent_api):
    payload = json.loads((CODEX_FIXTURES / "post_tool_use_bash.json").read_text())
    agent_api.post("/hooks/codex", payload)

    (step,) = steps()
    assert (step.tool_name, step.summary, step.outcome) == ("Bash", "ls src", "ok")
    assert step.tool_use_id == "call_9Lm3pRt4"


def test_hostile_markup_in_a_command_is_stored_as_text(hook):
    hook(tool_event("PreToolUse", "toolu_9", tool_input={"command": "echo '<img src=x>'"}))

    assert steps()[0].summary == "echo '<img src=x>'"


# --- the batched write path ----------------------------------------------------------------


def _step_jobs(user, count: int, *, prefix: str) -> list[_Job]:
    hook = HookInput.model_validate(tool_event("PreToolUse", "x"))
    jobs = []
    for n in range(count):
        event = "PreToolUse" if n % 2 == 0 else "PostToolUse"
        draft = step_draft(
            tool_use_id=f"{prefix}-{n // 2}",
            tool_name="Bash",
            tool_input={"command": f"make {n}"},
            at=hook_now(),
            outcome="running" if event == "PreToolUse" else "ok",
        )
        jobs.append(
            _Job(
                func=hooks.step_record,
                kwargs={"owner": user, "hook": hook, "step": draft},
                loop=None,
            )
        )
    return jobs


def hook_now():
    from django.utils import timezone

    return timezone.now()


def _run_batch(jobs: list[_Job]) -> list[dict]:
    writer = Writer()
    writer.within_batch.append(steps_store)
    for job in jobs:
        job.future.set_running_or_notify_cancel()
    with CaptureQueriesContext(connection) as queries:
        outcomes, left = writer._transaction(jobs)
    assert not left and all(error is None for _, _, error in outcomes)
    return queries.captured_queries


def test_a_batch_stores_all_its_steps_in_one_statement_whatever_their_number(hook, user):
    hook(load_fixture("session_start.json"))  # the agent is known from here on
    _run_batch(_step_jobs(user, 2, prefix="warm"))  # open loops are read once per process

    def statements(queries: list[dict]) -> int:
        return len([q for q in queries if "SAVEPOINT" not in q["sql"]])

    # What the process reads again once a second or more (an agent's last activity, the
    # sessions a budget holds or with a refusal open) falls in some batch or other, the more so
    # on a busy machine: of three of each size, the fewest statements are the batch's own.
    few, many = [], []
    for round_ in range(3):
        few.append(statements(_run_batch(_step_jobs(user, 4, prefix=f"few{round_}"))))
        queries = _run_batch(_step_jobs(user, 60, prefix=f"many{round_}"))
        assert len([q for q in queries if "activity_step" in q["sql"]]) == 1
        many.append(statements(queries))
    # Only savepoints grow with the batch: no query per step.
    assert min(many) == min(few)
    assert Step.objects.filter(tool_use_id__startswith="many0-").count() == 30
    assert set(Step.objects.values_list("outcome", flat=True)) == {"ok"}


def test_the_steps_of_a_refused_write_are_not_stored(hook, user):
    hook(load_fixture("session_start.json"))
    agent = Agent.objects.get()

    def refused() -> Outcome[None]:
        changes = Changes()
        draft = step_draft(
            tool_use_id="refused", tool_name="Bash", tool_input={}, at=hook_now(), outcome="ok"
        )
        changes.step(draft.report(agent=agent.pk, session=agent.session_id))
        raise ServiceError("nope", "Refused.")

    jobs = [*_step_jobs(user, 2, prefix="kept"), _Job(func=lambda: refused(), kwargs={}, loop=None)]
    writer = Writer()
    writer.within_batch.append(steps_store)
    for job in jobs:
        job.future.set_running_or_notify_cancel()
    writer._transaction(jobs)

    assert list(Step.objects.values_list("tool_use_id", flat=True)) == ["kept-0"]


def test_an_opencode_tool_call_is_a_step_from_running_to_its_error(agent_api):
    created = {"info": {"id": "ses_a1", "directory": "/work/shop", "title": ""}}
    agent_api.post("/hooks/opencode", {"type": "session.created", "properties": created})
    call = {"sessionID": "ses_a1", "callID": "call_x", "tool": "bash"}
    started = {**call, "status": "running", "input": {"command": "pytest -q"}}
    agent_api.post("/hooks/opencode", {"type": "agentboard.tool", "properties": started})

    assert steps()[0].outcome == "running"

    failed = {**call, "status": "error", "input": {"command": "pytest -q"}, "error": "1 failed\nx"}
    agent_api.post("/hooks/opencode", {"type": "agentboard.tool", "properties": failed})

    (step,) = steps()
    assert (step.summary, step.outcome, step.error) == ("pytest -q", "failed", "1 failed")
    assert step.agent.agent_id == "ses_a1"


def test_an_opencode_command_that_exited_non_zero_failed_and_three_alike_are_a_loop(agent_api):
    created = {"info": {"id": "ses_a1", "directory": "/work/shop", "title": ""}}
    agent_api.post("/hooks/opencode", {"type": "session.created", "properties": created})
    # opencode's bash ends "completed" whatever its command exited with; the plugin adds `exit`.
    for n, exit_code in enumerate([2, 2, 2, 0]):
        call = {"sessionID": "ses_a1", "callID": f"call_{n}", "tool": "bash", "exit": exit_code}
        ended = {**call, "status": "completed", "input": {"command": "pytest -q"}}
        agent_api.post("/hooks/opencode", {"type": "agentboard.tool", "properties": ended})

    assert [(s.outcome, s.error) for s in steps()] == [("failed", "Exit code 2")] * 3 + [("ok", "")]
    (concern,) = Concern.objects.all()
    assert concern.kind == "looping"
    assert concern.detail.startswith("“pytest -q” failed 3 times in ")
    assert concern.detail.endswith(": Exit code 2")
    assert concern.end_reason == "healthy step"


def test_a_batch_whose_steps_cannot_be_stored_still_commits_its_writes(hook, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(Step.objects, "bulk_create", broken)
    response = hook(load_fixture("post_tool_use_todowrite.json"))

    assert response.status_code == 200
    assert Agent.objects.get().todos.count() > 0
    assert not Step.objects.exists()


def test_a_plan_is_what_its_exit_plan_mode_step_waited_on(hook, settings):
    settings.AGENTBOARD_PLAN_HOOK_WAIT_SECONDS = 0.05
    request = load_fixture("permission_request_exit_plan_mode.json")
    hook(tool_event("PreToolUse", "toolu_plan", tool_name="ExitPlanMode", tool_input={}))
    hook(request)

    plan = Plan.objects.get()
    assert Step.objects.get().waited_on == f"plan:{plan.pk}"


def test_no_secret_sent_in_a_tool_call_is_stored(hook):
    hook(load_fixture("session_start.json"))
    for n, secret in enumerate(SECRETS):
        one_line = secret.text.replace("\n", " ")
        hook(tool_event("PreToolUse", f"s{n}", tool_input={"command": one_line}))
        hook(tool_event("PostToolUseFailure", f"s{n}", error=f"{one_line}\nfailed"))
        mcp = {"password": secret.value, "query": secret.text}
        hook(tool_event("PostToolUse", f"m{n}", tool_name="mcp__db__query", tool_input=mcp))

    stored = " ".join(
        " ".join(row)
        for row in Step.objects.values_list("summary", "detail", "error", "input_hash")
    )
    assert Step.objects.count() == 2 * len(SECRETS)
    assert "[redacted:" in stored
    leaked = [s.kind for s in SECRETS if s.value.split("\n")[0][:40] in stored]
    assert not leaked
