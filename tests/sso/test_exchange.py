"""The exchange with the identity provider, against a real one (oidc-provider, started by the
test) through a browser without JavaScript: ID tokens that name no key, that are not signed or
are signed with the client secret, a code used already, a userinfo endpoint that refuses; each
failure a 400 page naming it, and an entry in the audit log. Accounts linked by e-mail only when
that is switched on and one account has the address; an account single sign-on made is not
offered a password to change."""

from __future__ import annotations

import html
import json
import re
import urllib.request
from dataclasses import dataclass
from http.cookiejar import CookieJar
from typing import Any
from urllib.error import HTTPError
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

from tests.liveserver import LiveServer
from tests.sso.conftest import World, shell


@dataclass
class Answer:
    status: int
    body: str
    location: str

    @property
    def message(self) -> str:
        found = re.search(r'role="alert">(.*?)</p>', self.body, re.DOTALL)
        return html.unescape(found.group(1)) if found else ""


class _StopAt(urllib.request.HTTPRedirectHandler):
    """Follows redirects except to addresses starting with `stop` ("" stops at every one)."""

    def __init__(self, stop: str) -> None:
        self.stop = stop

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str):
        if newurl.startswith(self.stop):
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Browser:
    """Cookies, forms and redirects: it goes to the provider and back, and stops before the
    provider's answer (the callback address, with its code and state) reaches Agentboard, so
    a test can deliver it, deliver it twice, or change it."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.callback = f"{server.url}/oidc/callback/"
        cookies = urllib.request.HTTPCookieProcessor(CookieJar())
        self.to_provider = urllib.request.build_opener(cookies, _StopAt(self.callback))
        self.one_step = urllib.request.build_opener(cookies, _StopAt(""))

    def to_the_provider_and_back(self, login: str) -> str:
        """Starts a sign-in and signs in at the provider as `login` (any password does)."""
        try:
            page = self.to_provider.open(f"{self.server.url}/oidc/start/")
            action = re.search(r'<form[^>]*action="([^"]+)"', page.read().decode()).group(1)
            form = urlencode({"prompt": "login", "login": login, "password": "whatever"})
            self.to_provider.open(urljoin(page.url, action), data=form.encode())
        except HTTPError as stopped:
            location = stopped.headers.get("Location", "")
            if location.startswith(self.callback):
                return location
            raise
        raise AssertionError("The provider did not send the browser back to Agentboard.")

    def open(self, url: str) -> Answer:
        try:
            response = self.one_step.open(url)
        except HTTPError as error:
            return Answer(error.code, error.read().decode(), error.headers.get("Location", ""))
        return Answer(response.status, response.read().decode(), "")

    def sign_in(self, login: str) -> Answer:
        return self.open(self.to_the_provider_and_back(login))

    def settings_page(self) -> Answer:
        return self.open(f"{self.server.url}/settings/")


def signed_in(answer: Answer) -> bool:
    return (answer.status, answer.location) == (302, "/")


def failures(server: LiveServer) -> list[str]:
    rows = server.query(
        "SELECT summary FROM dashboard_auditentry WHERE action = 'auth.failed' ORDER BY id"
    )
    return [summary for (summary,) in rows]


def linked(server: LiveServer) -> dict[str, str]:
    """Who signs in with the provider: subject (the login at the provider) → account."""
    rows = server.query(
        "SELECT i.subject, u.username FROM sso_identity i JOIN auth_user u ON u.id = i.user_id"
    )
    return dict(rows)


def published_keys(world: World) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{world.provider.issuer}/jwks", timeout=5) as response:
        return json.load(response)["keys"]


def test_a_token_that_names_no_key_is_checked_with_the_providers_only_key(sso_world):
    world = sso_world()
    world.provider.account("dana", name="Dana Quinn", email="dana@example.com")
    world.provider.write(mode="no-kid")
    assert [("kid" in key) for key in published_keys(world)] == [False]

    browser = Browser(world.server)
    assert signed_in(browser.sign_in("dana"))
    assert "Logged in as <strong>dana</strong>" in browser.settings_page().body
    assert failures(world.server) == []
    assert linked(world.server) == {"dana": "dana"}


def test_a_token_that_names_no_key_is_refused_when_the_provider_publishes_several(sso_world):
    world = sso_world()
    world.provider.account("dana", name="Dana Quinn")
    world.provider.write(mode="no-kid-two-keys")

    answer = Browser(world.server).sign_in("dana")
    assert answer.status == 400
    assert answer.message == (
        "Acme's ID token does not say which of its 2 RS256 keys signed it, so it could not be "
        "checked and nobody was signed in; ask an admin to have Acme name the key in its tokens "
        "(kid), or publish only one."
    )
    assert failures(world.server) == [
        "The ID token names no key (no kid) and Acme publishes 2 RS256 keys."
    ]
    assert linked(world.server) == {}


def test_an_unsigned_token_or_one_signed_with_the_client_secret_signs_nobody_in(sso_world):
    world = sso_world()
    world.provider.account("mallory", name="Mallory", groups=["agentboard-admins"])
    reasons = {
        "alg-none": "the ID token is not signed",
        "hs256": "the ID token is signed with HS256, not RS256 as Acme says it signs",
    }
    for mode, reason in reasons.items():
        world.provider.write(mode=mode)
        answer = Browser(world.server).sign_in("mallory")
        assert answer.status == 400
        assert answer.message == (
            f"The answer from Acme could not be trusted ({reason}), so nobody was signed in; "
            "start again from the login page."
        )
    assert failures(world.server) == [
        "The ID token is not signed.",
        "The ID token is signed with HS256, not RS256 as Acme says it signs.",
    ]
    assert linked(world.server) == {}


def with_code(answer: str, code: str) -> str:
    state = parse_qs(urlsplit(answer).query)["state"][0]
    return f"{answer.partition('?')[0]}?{urlencode({'code': code, 'state': state})}"


def test_a_code_used_already_ends_on_the_400_page_saying_so(sso_world):
    world = sso_world()
    world.provider.account("dana", name="Dana Quinn")
    world.provider.account("mallory", name="Mallory")
    dana = Browser(world.server)
    answer_for_dana = dana.to_the_provider_and_back("dana")
    assert signed_in(dana.open(answer_for_dana))

    # The same answer again in her browser (a reload, the back button): that sign-in is over.
    again = dana.open(answer_for_dana)
    assert again.status == 400
    assert again.message == (
        "This answer from Acme belongs to no sign-in started in this browser, or to one that "
        "finished already, so nobody was signed in; start again from the login page."
    )
    # Someone who copied her code puts it in a sign-in of their own: Acme refuses a used code.
    mallory = Browser(world.server)
    dana_code = parse_qs(urlsplit(answer_for_dana).query)["code"][0]
    replayed = mallory.open(with_code(mallory.to_the_provider_and_back("mallory"), dana_code))
    assert replayed.status == 400
    assert replayed.message == (
        "Acme did not accept the sign-in code: it was used already, or it expired; start again "
        "from the login page."
    )
    assert mallory.settings_page().location.startswith("/accounts/login/")
    assert linked(world.server) == {"dana": "dana"}
    state_unknown, code_refused = failures(world.server)
    assert state_unknown.startswith("The answer's state is not one this browser is waiting for")
    assert code_refused.startswith("Acme refused the authorization code: invalid_grant")


def test_a_userinfo_refusal_is_a_400_and_a_provider_in_trouble_a_502(sso_world):
    world = sso_world()
    world.provider.account("dana", name="Dana Quinn")
    world.provider.write(mode="userinfo-refused")
    refused = Browser(world.server).sign_in("dana")
    assert refused.status == 400
    assert refused.message == (
        "Acme did not give Agentboard your details (its userinfo endpoint answered 401); start "
        "again from the login page."
    )
    world.provider.write(mode="token-down")
    down = Browser(world.server).sign_in("dana")
    assert down.status == 502
    assert down.message == (
        "Acme did not answer while signing you in; try again, or sign in with your Agentboard "
        "password."
    )
    assert failures(world.server) == [
        "Acme's userinfo endpoint answered 401: invalid_token.",
        f"{world.provider.issuer} did not answer (HTTPError).",
    ]
    assert linked(world.server) == {}


def local_accounts(world: World, **emails: str) -> None:
    shell(
        world.server,
        "from django.contrib.auth import get_user_model\n"
        + "".join(
            f"get_user_model().objects.create_user({name!r}, email={email!r}, "
            "password='a-long-password-1')\n"
            for name, email in emails.items()
        ),
    )


def test_a_verified_address_does_not_take_over_a_local_account_by_default(sso_world):
    world = sso_world()
    local_accounts(world, dana="Dana@Example.com")
    world.provider.account("dana", name="Dana Quinn", email="dana@example.com")

    assert signed_in(Browser(world.server).sign_in("dana"))
    assert linked(world.server) == {"dana": "dana-2"}


def test_with_linking_on_only_the_one_account_with_the_address_is_taken_over(sso_world):
    world = sso_world(AGENTBOARD_OIDC_LINK_BY_EMAIL="true")
    local_accounts(world, dana="Dana@Example.com", sam="sam@example.com", sam2="SAM@example.com")
    world.provider.account("dana", name="Dana Quinn", email="dana@example.com")
    world.provider.account("sam", name="Sam Okafor", email="sam@example.com")

    assert signed_in(Browser(world.server).sign_in("dana"))
    refused = Browser(world.server).sign_in("sam")
    assert refused.status == 400
    assert refused.message == (
        "More than one Agentboard account has the address sam@example.com, so the one that is "
        "yours is not known and nobody was signed in; ask an admin to leave the address on your "
        "account only, then sign in again."
    )
    assert linked(world.server) == {"dana": "dana"}
    assert failures(world.server) == [
        "Not linked by e-mail: two accounts have the address sam@example.com."
    ]


def test_an_account_single_sign_on_made_is_not_offered_a_password_to_change(sso_world):
    world = sso_world()
    world.provider.account("dana", name="Dana Quinn")
    browser = Browser(world.server)
    assert signed_in(browser.sign_in("dana"))

    page = browser.settings_page().body
    assert "Change your password" not in page
    assert "You sign in with single sign-on: your password is your identity provider" in page
    form = browser.open(f"{world.server.url}/accounts/password/")
    assert (form.status, form.location) == (302, "/settings/")
    assert "Your account has no Agentboard password to change" in browser.settings_page().body
