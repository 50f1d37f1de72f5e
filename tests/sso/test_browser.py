"""Signing in with the company's identity provider, in real Chromium against a real OpenID
provider (oidc-provider, started by the test): the login page's button, groups made team
memberships, a removed group gone at the next sign-in, bad tokens and a provider that is down
ending on a clear page while passwords still work, and every sign-in in the audit log."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.conftest import login, screenshot
from tests.e2e.test_accessibility import violations
from tests.liveserver import ROOT, LiveServer
from tests.sso.conftest import shell

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


def make_teams(server: LiveServer, *names: str) -> None:
    shell(
        server,
        "from dashboard.models import Team\n"
        + "".join(f"Team.objects.create(name={name!r})\n" for name in names),
    )


def memberships(server: LiveServer, username: str) -> dict[str, str]:
    rows = server.query(
        "SELECT t.name, m.role FROM dashboard_membership m "
        "JOIN dashboard_team t ON t.id = m.team_id JOIN auth_user u ON u.id = m.user_id "
        "WHERE u.username = %s",
        (username,),
    )
    return dict(rows)


def audit_rows(server: LiveServer) -> list[tuple]:
    """The entries after the server's first start (which records the first admin and token)."""
    return server.query(
        "SELECT action, actor_name, surface, summary, address FROM dashboard_auditentry"
        " WHERE surface != 'first start' ORDER BY id"
    )


def sign_in_with_the_button(page, server: LiveServer, login_name: str) -> None:
    page.goto(f"{server.url}/accounts/login/")
    page.get_by_role("link", name="Log in with Acme").click()
    if page.locator("input[name=login]").count():
        # oidc-provider's own sign-in form (it accepts any password for a known account).
        page.fill("input[name=login]", login_name)
        page.fill("input[name=password]", "whatever")
        page.click("button[type=submit]")


def test_a_person_signs_in_with_the_button_and_their_groups_become_teams(sso_world, chromium):
    world = sso_world()
    server, provider = world.server, world.provider
    make_teams(server, "Shop", "Infra", "Docs")
    provider.account(
        "dana",
        name="Dana <b>Quinn</b>",
        email="dana@example.com",
        groups=["shop", "Infra:reviewers", "<script>alert(1)</script>", "g" * 400],
    )

    for scheme in ("light", "dark"):
        for size, viewport in VIEWPORTS.items():
            context = chromium.new_context(viewport=viewport, color_scheme=scheme)
            page = context.new_page()
            page.goto(f"{server.url}/accounts/login/")
            assert page.get_by_role("link", name="Log in with Acme").is_visible()
            assert page.get_by_role("button", name="Log in").is_visible()
            screenshot(page, f"sso-login-{scheme}-{size}")
            assert violations(page) == []
            context.close()

    context = chromium.new_context(viewport=VIEWPORTS["desktop"])
    page = context.new_page()
    sign_in_with_the_button(page, server, "dana")
    page.wait_for_url(f"{server.url}/")
    page.wait_for_selector("#connection[data-state=live]")
    assert "dana · log out" in page.locator("header").inner_text()
    assert memberships(server, "dana") == {"Shop": "member", "Infra": "reviewer"}
    name = server.query("SELECT first_name, last_name FROM auth_user WHERE username = 'dana'")
    assert name == [("Dana", "<b>Quinn</b>")]
    assert "Ignored a group whose name is longer than 110 characters." in server.log()

    # An admin adds her to Docs by hand: that membership is the admin's, not the provider's.
    shell(
        server,
        "from django.contrib.auth import get_user_model\n"
        "from dashboard.models import Membership, Team\n"
        "Membership.objects.create(team=Team.objects.get(name='Docs'), "
        "user=get_user_model().objects.get(username='dana'))\n",
    )
    page.locator("form.logout button").click()
    page.wait_for_url(f"{server.url}/accounts/login/")

    provider.account("dana", name="Dana Quinn", email="dana@example.com", groups=["shop"])
    sign_in_with_the_button(page, server, "dana")
    page.wait_for_url(f"{server.url}/")
    assert memberships(server, "dana") == {"Shop": "member", "Docs": "member"}

    actions = [(action, actor, surface) for action, actor, surface, *_ in audit_rows(server)]
    assert actions == [
        ("team.member_added", "dana", "single sign-on"),
        ("team.member_added", "dana", "single sign-on"),
        ("auth.signed_in", "dana", "single sign-on"),
        ("auth.signed_out", "dana", "single sign-on"),
        ("team.member_removed", "dana", "single sign-on"),
        ("auth.signed_in", "dana", "single sign-on"),
    ]
    assert all(address == "127.0.0.1" for *_, address in audit_rows(server))

    # The lead (a local account) reads it all on the audit page, the group names as text.
    lead = chromium.new_context(viewport=VIEWPORTS["desktop"]).new_page()
    login(lead, server)
    lead.goto(f"{server.url}/audit/")
    text = lead.locator("main").inner_text()
    assert "dana joined Infra as a reviewer." in text
    assert "dana left Infra: not in its group any more." in text
    context.close()


def test_signing_out_can_sign_out_at_the_provider_too(sso_world, chromium):
    world = sso_world(AGENTBOARD_OIDC_SIGN_OUT_AT_PROVIDER="true")
    server, provider = world.server, world.provider
    provider.account("dana", name="Dana Quinn", groups=[])
    page = chromium.new_context().new_page()
    sign_in_with_the_button(page, server, "dana")
    page.wait_for_url(f"{server.url}/")
    page.locator("form.logout button").click()
    page.wait_for_url(f"{provider.issuer}/session/end**")
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(f"{server.url}/accounts/login/")
    page.goto(f"{server.url}/")
    assert page.url.startswith(f"{server.url}/accounts/login/")
    # The provider asks who it is again: its own session ended too.
    page.get_by_role("link", name="Log in with Acme").click()
    page.wait_for_selector("input[name=login]")
    assert [row[0] for row in audit_rows(server)] == ["auth.signed_in", "auth.signed_out"]


def refused(page, server: LiveServer, shot: str = "") -> str:
    page.wait_for_selector("text=Sign-in did not work")
    message = page.locator("[role=alert]").inner_text()
    if shot:
        screenshot(page, shot)
        assert violations(page) == []
    page.goto(f"{server.url}/")
    assert page.url.startswith(f"{server.url}/accounts/login/")
    return message


@pytest.mark.parametrize("mode", ["wrong-audience", "wrong-key"])
def test_a_tampered_or_misaddressed_id_token_signs_nobody_in(sso_world, chromium, mode):
    world = sso_world()
    world.provider.account("mallory", name="Mallory", groups=["agentboard-admins"])
    world.provider.write(mode=mode)
    page = chromium.new_context().new_page()
    responses: list[int] = []
    page.on(
        "response", lambda r: responses.append(r.status) if "/oidc/callback/" in r.url else None
    )
    sign_in_with_the_button(page, world.server, "mallory")
    message = refused(page, world.server, shot=f"sso-refused-{mode}")
    reason = (
        "the ID token was issued to another application"
        if mode == "wrong-audience"
        else "the ID token's signature does not verify with Acme's key"
    )
    assert message == (
        f"The answer from Acme could not be trusted ({reason}), so nobody was signed in; start "
        "again from the login page."
    )
    assert responses == [400]
    assert world.server.query("SELECT count(*) FROM auth_user WHERE username = 'mallory'") == [(0,)]
    failed = [row for row in audit_rows(world.server) if row[0] == "auth.failed"]
    assert len(failed) == 1
    assert failed[0][2] == "single sign-on"
    assert failed[0][3] == f"{reason[0].upper()}{reason[1:]}."


def test_a_provider_that_is_down_shows_a_clear_page_and_passwords_still_work(sso_world, chromium):
    world = sso_world()
    world.provider.stop()
    page = chromium.new_context(viewport=VIEWPORTS["phone"], color_scheme="dark").new_page()
    page.goto(f"{world.server.url}/accounts/login/")
    page.get_by_role("link", name="Log in with Acme").click()
    message = refused(page, world.server, shot="sso-provider-down-dark-phone")
    assert message == (
        "Acme is not answering right now; sign in with your Agentboard password, or try again "
        "in a few minutes."
    )
    login(page, world.server)
    assert "lead · log out" in page.locator("header").inner_text()


def test_a_provider_that_fails_half_way_shows_a_clear_page(sso_world, chromium):
    world = sso_world()
    world.provider.account("dana", name="Dana", groups=[])
    world.provider.write(mode="token-down")
    page = chromium.new_context().new_page()
    statuses: list[int] = []
    page.on("response", lambda r: statuses.append(r.status) if "/callback/" in r.url else None)
    sign_in_with_the_button(page, world.server, "dana")
    assert refused(page, world.server) == (
        "Acme did not answer while signing you in; try again, or sign in with your Agentboard "
        "password."
    )
    assert statuses == [502]
    assert world.server.query("SELECT count(*) FROM auth_user WHERE username = 'dana'") == [(0,)]


def test_an_error_from_the_provider_is_explained_and_its_words_kept_for_admins(sso_world, chromium):
    world = sso_world()
    page = chromium.new_context().new_page()
    response = page.goto(
        f"{world.server.url}/oidc/callback/?error=access_denied"
        "&error_description=%3Cb%3Enot+allowed%3C%2Fb%3E&state=nothing"
    )
    assert response.status == 400
    assert page.locator("[role=alert]").inner_text() == (
        "Acme said you may not use Agentboard, or the sign-in was cancelled; try again, or "
        "sign in with your Agentboard password."
    )
    assert "not allowed" not in page.content()  # anyone could have written it
    (entry,) = [row for row in audit_rows(world.server) if row[0] == "auth.failed"]
    assert entry[3] == "Acme answered access_denied: <b>not allowed</b>"


def test_failed_passwords_and_a_lockout_are_in_the_audit_log(sso_world, chromium):
    world = sso_world(AGENTBOARD_LOGIN_FAILURE_LIMIT="2")
    server = world.server
    page = chromium.new_context().new_page()
    hostile = "<img src=x onerror=alert(1)>"
    for attempt in range(3):
        page.goto(f"{server.url}/accounts/login/")
        page.get_by_label("Username").fill(hostile if attempt == 0 else "lead")
        page.get_by_label("Password").fill("wrong")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state()
    rows = [(action, actor, surface) for action, actor, surface, *_ in audit_rows(server)]
    assert rows[:2] == [
        ("auth.failed", "", "sign-in page"),
        ("auth.locked_out", "lead", "sign-in page"),
    ]
    assert audit_rows(server)[0][3] == f"Wrong password for the user name “{hostile}”."
    shell(server, "from axes.utils import reset\nreset()\n")
    login(page, server)
    page.goto(f"{server.url}/audit/?action=auth.failed")
    assert hostile in page.locator("main").inner_text()
    assert page.locator("main img").count() == 0


def start_failure(tmp_path, env: dict[str, str]) -> subprocess.CompletedProcess:
    from tests.liveserver import free_port, server_env

    data_dir = tmp_path / "refused"
    data_dir.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "manage.py", "serve", "--port", str(free_port())],
        cwd=ROOT, env=server_env(data_dir) | env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_misconfigured_issuer_stops_the_server_at_start_with_one_sentence(tmp_path):
    from tests.liveserver import free_port

    closed = f"http://127.0.0.1:{free_port()}"
    base = {"AGENTBOARD_OIDC_CLIENT_ID": "agentboard", "AGENTBOARD_OIDC_CLIENT_SECRET": "s"}
    unreachable = start_failure(tmp_path, base | {"AGENTBOARD_OIDC_ISSUER": closed})
    assert unreachable.returncode == 1
    assert unreachable.stderr.strip() == (
        f"Agentboard cannot start: The identity provider at {closed} could not be reached "
        "(ConnectError); check AGENTBOARD_OIDC_ISSUER and that the provider is up."
    )
    assert unreachable.stdout == ""
    no_secret = start_failure(
        tmp_path, {"AGENTBOARD_OIDC_ISSUER": closed, "AGENTBOARD_OIDC_CLIENT_ID": "agentboard"}
    )
    assert no_secret.returncode == 1
    assert no_secret.stderr.strip() == (
        "Agentboard cannot start: Single sign-on needs AGENTBOARD_OIDC_CLIENT_ID and "
        "AGENTBOARD_OIDC_CLIENT_SECRET as well as AGENTBOARD_OIDC_ISSUER."
    )


def test_an_issuer_whose_discovery_names_another_issuer_stops_the_server(sso_world, tmp_path):
    world = sso_world()
    issuer = f"{world.provider.issuer}/"
    base = {"AGENTBOARD_OIDC_CLIENT_ID": "agentboard", "AGENTBOARD_OIDC_CLIENT_SECRET": "s"}
    refused = start_failure(tmp_path, base | {"AGENTBOARD_OIDC_ISSUER": issuer})
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"Agentboard cannot start: The identity provider calls itself "
        f"'{world.provider.issuer}', not '{issuer}': set AGENTBOARD_OIDC_ISSUER to its exact "
        "issuer."
    )
    try:
        urllib.request.urlopen(f"{world.server.url}/healthz", timeout=5).close()
    except urllib.error.URLError:
        pytest.fail("the first server stopped too")
