"""A session's timeline page: lanes of steps on a time axis, a list, filters and a step's
detail, bounded in queries however long the session."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from dashboard.activity.models import Step
from dashboard.activity.timeline import session_timeline, ticks
from dashboard.models import Session
from tests.activity.conftest import SESSION_ID, load_fixture, tool_event
from tests.conftest import parse_html

pytestmark = pytest.mark.django_db

PAGE = f"/sessions/{SESSION_ID}/timeline/"


@pytest.fixture
def steps(hook):
    """The main agent runs tests (ok), then a failing build; a subagent reads a file."""
    hook(load_fixture("session_start.json"))
    hook(tool_event("PreToolUse", "t-ok", tool_input={"command": "pytest tests/api"}))
    hook(tool_event("PostToolUse", "t-ok", tool_input={"command": "pytest tests/api"}))
    hook(tool_event("PostToolUseFailure", "t-bad", tool_input={"command": "make build"},
                    error="make: *** [build] Error 2\nmore"))  # fmt: skip
    sub = load_fixture("subagent_start.json")
    hook(sub)
    read = {"file_path": "/repo/orders/views.py"}
    hook(tool_event("PreToolUse", "t-read", tool_name="Read", tool_input=read,
                    agent_id=sub["agent_id"], agent_type=sub["agent_type"]))  # fmt: skip
    return sub


def lanes_of(html: bytes) -> dict[str, list[str]]:
    """Each lane's agent and the names of its marks, as a screen reader reads them."""
    found = {}
    for lane in parse_html(html).find_all("div", cls="lane"):
        label = lane.find("span", cls="lane-label").find("a").text()
        found[label] = [mark.attrs["aria-label"] for mark in lane.find_all("a", cls="mark-link")]
    return found


def test_every_agent_is_a_lane_with_its_steps_and_subagents_under_their_parent(steps, client, user):
    client.force_login(user)
    response = client.get(PAGE)

    assert response.status_code == 200
    lanes = lanes_of(response.content)
    assert list(lanes) == ["main", steps["agent_type"]]
    assert [words.split(":")[0] for words in lanes["main"]] == [
        "Bash pytest tests/api",
        "Bash make build",
    ]
    assert "failed after" in lanes["main"][1] and "make: *** [build] Error 2" in lanes["main"][1]
    assert lanes[steps["agent_type"]][0].startswith("Read /repo/orders/views.py: running for ")
    assert b"depth-1" in response.content


def test_filters_narrow_the_lanes_and_an_empty_result_says_so(steps, client, user):
    client.force_login(user)

    failures = lanes_of(client.get(PAGE + "?failures=1").content)
    assert {agent: len(marks) for agent, marks in failures.items()} == {"main": 1}
    reads = lanes_of(client.get(PAGE + "?tool=Read").content)
    assert list(reads) == [steps["agent_type"]]
    only_sub = lanes_of(client.get(PAGE + f"?agent={steps['agent_id']}").content)
    assert list(only_sub) == [steps["agent_type"]]
    nothing = client.get(PAGE + "?tool=WebFetch")
    assert b"No step matches these filters" in nothing.content


def test_a_step_opens_its_detail_and_the_list_shows_the_newest_first(steps, client, user):
    client.force_login(user)
    failed = Step.objects.get(tool_use_id="t-bad")

    detail = client.get(PAGE + f"?step={failed.pk}")
    text = parse_html(detail.content).find("aside", id="step-detail").text()
    assert "make build" in text and "failed" in text and "make: *** [build] Error 2" in text
    assert "t-bad" in text

    listed = parse_html(client.get(PAGE + "?view=list").content)
    rows = [row.text() for row in listed.find("tbody").find_all("tr")]
    tools = [
        row.find("td", cls="step-what").find("a").text()
        for row in listed.find("tbody").find_all("tr")
    ]
    assert tools == ["Read", "Bash", "Bash"]
    assert "make build" in rows[1] and "failed" in rows[1]


def test_the_list_comes_a_page_at_a_time(hook, client, user):
    hook(load_fixture("session_start.json"))
    for n in range(55):
        hook(tool_event("PostToolUse", f"t{n:02}", tool_input={"command": f"echo {n}"}))
    client.force_login(user)

    first = parse_html(client.get(PAGE + "?view=list").content)
    assert len(first.find("tbody").find_all("tr")) == 50
    pager = first.find("p", cls="pager").find_all("a")
    older = next(a.attrs["href"] for a in pager if a.text() == "Older steps")
    second = parse_html(client.get(PAGE + older).content)
    assert [code.text() for code in second.find("tbody").find_all("code")] == [
        f"echo {n}" for n in range(4, -1, -1)
    ]


@pytest.mark.parametrize(
    "query,message",
    [
        ("?range=forever", b"There is no range"),
        ("?view=cards", b"There is no view"),
        ("?agent=nobody", b"There is no agent with this id"),
        ("?view=list&before=not-a-cursor", b"not one this list handed out"),
        ("?tool=a%00b", b"NUL"),
        ("?agent=" + "x" * 300, b"at most 200 characters"),
    ],
)
def test_a_bad_filter_gets_a_clear_400(steps, client, user, query, message):
    client.force_login(user)
    response = client.get(PAGE + query)
    assert response.status_code == 400
    assert message in response.content


def test_a_step_of_another_session_or_none_is_404(steps, client, user):
    client.force_login(user)
    assert client.get(PAGE + "?step=999999").status_code == 404
    assert client.get(PAGE + "?step=abc").status_code == 404
    assert client.get("/sessions/nope/timeline/").status_code == 404


def test_the_page_needs_a_login(steps, client):
    response = client.get(PAGE)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_markup_in_a_command_is_shown_as_text(hook, client, user):
    hook(load_fixture("session_start.json"))
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    hook(tool_event("PostToolUse", "t-x", tool_input={"command": hostile}))
    client.force_login(user)
    step = Step.objects.get(tool_use_id="t-x")
    for query in ("", "?view=list", f"?step={step.pk}"):
        content = client.get(PAGE + query).content
        assert b"<script>alert" not in content and b"<img src=x" not in content


def test_the_queries_stay_bounded_however_many_steps(
    hook, client, user, django_assert_max_num_queries
):
    hook(load_fixture("session_start.json"))
    sub = load_fixture("subagent_start.json")
    hook(sub)
    for n in range(30):
        hook(tool_event("PostToolUse", f"m{n}"))
        hook(
            tool_event(
                "PostToolUse", f"s{n}", agent_id=sub["agent_id"], agent_type=sub["agent_type"]
            )
        )
    client.force_login(user)
    client.get(PAGE)  # the login's own first queries
    # (Three of them steering's: the paused agents, and the messages and pauses listed.)
    with django_assert_max_num_queries(23) as few:
        client.get(PAGE)
    queries = len(few.captured_queries)
    for n in range(30, 200):
        hook(tool_event("PostToolUse", f"m{n}"))
    with django_assert_max_num_queries(queries):
        client.get(PAGE)
    with django_assert_max_num_queries(queries + 1):
        client.get(PAGE + "?view=list")


def test_only_the_latest_marks_are_drawn_and_a_range_reads_its_own_steps(hook, user):
    hook(load_fixture("session_start.json"))
    for n in range(5):
        hook(tool_event("PostToolUse", f"t{n}"))
    session = Session.objects.get(session_id=SESSION_ID)
    old = timezone.now() - timedelta(hours=3)
    Step.objects.filter(tool_use_id__in=["t0", "t1"]).update(started_at=old, ended_at=old)

    hour = session_timeline(session, range_key="1h")
    assert hour.shown == 3 and not hour.capped
    whole = session_timeline(session, range_key="all")
    assert whole.shown == 5
    marks = whole.lanes[0].marks
    assert marks[0].left == pytest.approx(0, abs=0.5)
    assert all(0 <= mark.left <= 100 and mark.left + mark.width <= 100.001 for mark in marks)


def test_ticks_fall_on_round_times_across_the_axis():
    start = timezone.now().replace(hour=10, minute=3, second=7, microsecond=0)
    found = ticks(start, start + timedelta(minutes=25))
    assert 2 <= len(found) <= 6
    assert all(tick.at.second == 0 and tick.at.minute % 5 == 0 for tick in found)
    assert all(0 <= tick.left <= 100 for tick in found)
