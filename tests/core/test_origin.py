"""Where a session runs: its repository (normalized into one project), its machine, its person;
reported in headers by the agent's side, recorded once, never trusted blindly."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.core.origin import (
    HOST_HEADER,
    REPOSITORY_HEADER,
    forget_noted,
    normalize_repository,
)
from dashboard.models import Project, Session
from tests.hooks.conftest import SESSION_ID, load_fixture

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "remote",
    [
        "git@github.com:acme/shop.git",
        "git@github.com:acme/shop",
        "https://github.com/acme/shop",
        "https://github.com/acme/shop.git",
        "https://github.com/acme/shop/",
        "https://dana:ghp_s3cr3tT0ken@github.com/acme/shop.git",
        "ssh://git@github.com/acme/shop.git",
        "ssh://git@GitHub.com:22/acme/shop.git",
        "github.com:acme/shop.git",
    ],
)
def test_every_spelling_of_one_remote_is_one_project(remote):
    assert normalize_repository(remote) == "github.com/acme/shop"


def test_nested_groups_and_self_hosted_servers_keep_their_whole_path():
    assert (
        normalize_repository("git@gitlab.acme.io:team/sub/api.git") == "gitlab.acme.io/team/sub/api"
    )
    assert normalize_repository("https://git.acme.io:8443/scm/shop") == "git.acme.io/scm/shop"


@pytest.mark.parametrize(
    "remote",
    ["", "   ", "/home/dana/shop", "file:///srv/git/shop.git", "../shop", "https://github.com/",
     "https://github.com/acme/../etc", "git@github.com:acme/sh\x00op", "x" * 700,
     "http://[::1", "<script>alert(1)</script>", "https://x.com/<b>/y",
     'https://x.com/acme/"onmouseover=alert(1)', "git@github.com:acme/\ud800.git",
     "https://github.com/acme/sh\x00op"],
)  # fmt: skip
def test_what_is_not_a_repository_address_names_no_project(remote):
    assert normalize_repository(remote) == ""


def start(hook, headers: dict | None = None, **fields):
    response = hook(load_fixture("session_start.json", **fields), headers=headers)
    assert response.status_code == 200, response.content
    return Session.objects.get(session_id=fields.get("session_id", SESSION_ID))


def test_a_session_records_its_repository_machine_and_project(hook):
    session = start(
        hook,
        {REPOSITORY_HEADER: "git@github.com:acme/shop.git", HOST_HEADER: "Dana-Laptop.local"},
    )

    assert (session.repository, session.host) == ("github.com/acme/shop", "dana-laptop.local")
    assert session.project == "shop"
    assert session.project_record.key == "github.com/acme/shop"


def test_two_people_on_two_machines_in_one_repository_share_one_project(hook):
    start(hook, {REPOSITORY_HEADER: "git@github.com:acme/shop.git", HOST_HEADER: "one"})
    start(hook, {REPOSITORY_HEADER: "https://github.com/acme/shop", HOST_HEADER: "two"},
          session_id="second-session", cwd="/Users/ben/code/shop-clone")  # fmt: skip

    assert Project.objects.count() == 1
    assert Session.objects.filter(project_record__key="github.com/acme/shop").count() == 2


def test_without_a_repository_the_folder_is_the_project_and_the_machine_unknown(hook):
    session = start(hook)

    assert session.project_record.key == "folder:shop"
    assert (session.project, session.host_label) == ("shop", "unknown machine")


def test_a_folder_project_gives_way_to_the_repository_once_reported(hook):
    assert start(hook).project_record.key == "folder:shop"
    session = start(hook, {REPOSITORY_HEADER: "git@github.com:acme/shop.git"})
    assert session.project_record.key == "github.com/acme/shop"


def test_the_first_report_sticks_and_a_different_one_is_ignored_with_a_log_line(hook, caplog):
    start(hook, {REPOSITORY_HEADER: "git@github.com:acme/shop.git", HOST_HEADER: "one"})
    other = {REPOSITORY_HEADER: "git@github.com:acme/other.git", HOST_HEADER: "two"}
    # In this process it costs nothing: what it says fills no unknown field.
    prompt = load_fixture("user_prompt_submit.json")
    with CaptureQueriesContext(connection) as differing:
        hook(prompt, headers=other)
    with CaptureQueriesContext(connection) as same:
        hook(prompt)
    assert len(differing) == len(same)
    # Another process (one that has not noted it) says why it ignores it, once.
    forget_noted()
    session = start(hook, other)

    assert (session.repository, session.host) == ("github.com/acme/shop", "one")
    assert "ignored repository 'github.com/acme/other'" in caplog.text
    assert "ignored host 'two'" in caplog.text


@pytest.mark.parametrize(
    "headers",
    [
        {HOST_HEADER: "x" * 300},
        {HOST_HEADER: "<b>box</b>"},
        {HOST_HEADER: "tab\there"},
        {REPOSITORY_HEADER: "<img src=x onerror=alert(1)>"},
        {REPOSITORY_HEADER: "https://github.com/" + "a/" * 400},
        {HOST_HEADER: "box\x00one", REPOSITORY_HEADER: "https://github.com/acme/sh\x00op"},
        {HOST_HEADER: "box\ud800", REPOSITORY_HEADER: "git@github.com:acme/\ud800.git"},
        # A lone surrogate's UTF-8 bytes, as a header carries them (read as latin-1).
        {HOST_HEADER: "box\xed\xa0\x80", REPOSITORY_HEADER: "https://github.com/acme/\xed\xa0\x80"},
        {REPOSITORY_HEADER: "https://x.com/<b>/y"},
        {REPOSITORY_HEADER: "git@x.com:acme/<script>alert(1)</script>.git"},
    ],
)
def test_a_hostile_or_oversize_value_is_ignored_and_the_hook_still_works(hook, headers, caplog):
    session = start(hook, headers)

    assert session.host == "" or session.host.isprintable()
    assert "<" not in session.host + session.repository
    assert session.project_record.key == "folder:shop"
    assert "ignored" in caplog.text


def test_hostile_values_never_reach_a_page_as_markup(hook, user, client):
    start(hook, {REPOSITORY_HEADER: "https://x.com/<b>/y", HOST_HEADER: "<b>box</b>"})
    start(hook, {REPOSITORY_HEADER: "git@github.com:acme/\ud800\x00.git",
                 HOST_HEADER: "box\ud800"}, session_id="second-session")  # fmt: skip
    client.force_login(user)
    for url in ("/", f"/sessions/{SESSION_ID}/", "/sessions/second-session/", "/projects/"):
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert "<b>" not in page and "&lt;b&gt;" not in page, url
        assert "\x00" not in page, url


def test_a_warm_session_costs_no_query_for_its_origin(hook):
    headers = {REPOSITORY_HEADER: "git@github.com:acme/shop.git", HOST_HEADER: "one"}
    start(hook, headers)
    prompt = load_fixture("user_prompt_submit.json")
    hook(prompt, headers=headers)
    with CaptureQueriesContext(connection) as with_origin:
        hook(prompt, headers=headers)
    with CaptureQueriesContext(connection) as without:
        hook(prompt)
    assert len(with_origin) == len(without)


def test_an_api_agent_reports_its_origin_in_the_same_headers(agent_api):
    response = agent_api.put_todos(
        "api-sess", "api-sess", {"todos": []},
        headers={REPOSITORY_HEADER: "https://gitlab.com/acme/api.git", HOST_HEADER: "ci-runner-7"},
    )  # fmt: skip
    assert response.status_code == 200, response.content
    session = Session.objects.get(session_id="api-sess")
    assert (session.project, session.host) == ("api", "ci-runner-7")
