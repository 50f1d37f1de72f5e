from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.core import redaction
from dashboard.core.redaction import (
    MAX_JSON_CHARS,
    MAX_JSON_DEPTH,
    MAX_JSON_NODES,
    MAX_JSON_STRINGS,
    MAX_TEXT_CHARS,
    OVERLAP,
    TOO_DEEP,
    UNSCANNED,
    WINDOW,
    redact,
    redact_json,
    secret_name_kind,
)
from tests.core.corpus import COMMAND_LINE, ORDINARY, SECRETS, Secret

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def leaked(secret: str, text: str) -> str | None:
    """A part of the secret (ten characters or all of a shorter one) found in `text`."""
    size = min(10, len(secret))
    for start in range(len(secret) - size + 1):
        if secret[start : start + size] in text:
            return secret[start : start + size]
    return None


@pytest.mark.parametrize("secret", SECRETS, ids=lambda secret: secret.text[:40])
def test_it_replaces_each_secret_with_its_kind(secret: Secret):
    redacted = redact(secret.text)

    assert leaked(secret.value, redacted) is None, redacted
    assert f"[redacted:{secret.kind}]" in redacted, redacted


def test_the_corpus_holds_thirty_secrets_or_more_of_many_kinds():
    assert len(SECRETS) >= 30
    assert len({secret.kind for secret in SECRETS}) >= 15
    assert len(COMMAND_LINE) >= 20


@pytest.mark.parametrize("secret", COMMAND_LINE, ids=lambda secret: secret.text[:40])
def test_a_credential_on_a_command_line_goes_and_the_command_stays_readable(secret: Secret):
    redacted = redact(secret.text)

    assert leaked(secret.value, redacted) is None, redacted
    for part in secret.kept:
        assert part in redacted, redacted


def test_a_basic_auth_pair_keeps_its_account_and_loses_its_password():
    text = "curl -u ci-bot:9f8e7d6c5b4a39281706f5e4d3c2b1a0 https://api.acme.dev/v1/me"

    assert redact(text) == "curl -u ci-bot:[redacted:password] https://api.acme.dev/v1/me"


def test_any_password_given_to_an_http_client_goes_but_only_a_password_like_one_elsewhere():
    assert redact("curl --user=deploy:hunter22 https://x") == (
        "curl --user=deploy:[redacted:password] https://x"
    )
    assert (
        redact("some-cli -u deploy:hunter22 sync") == "some-cli -u deploy:[redacted:password] sync"
    )
    # Elsewhere a pair of names is a user and a group, and a host may have a port.
    for text in ("podman run -u deploy:deployers img", "some-cli -u localhost:8080/api status"):
        assert redact(text) == text


def test_a_password_option_is_one_only_for_the_commands_it_belongs_to():
    assert redact("mysqldump -uroot -pS3cure_Db_2024 app") == (
        "mysqldump -uroot -p[redacted:password] app"
    )
    # mysql reads a password after `-p ` as the database's name; ssh's `-p` is a port.
    assert redact("mysql -u root -p S3cure_Db_2024") == "mysql -u root -p S3cure_Db_2024"
    assert redact("ssh -p 2222 host; ls -a") == "ssh -p 2222 host; ls -a"


def test_a_name_that_may_be_a_secrets_hides_only_a_token_like_value():
    assert redact("MAILGUN_KEY=key-3ax6xnjp29jd6fds4gc373sgvjxteol0") == (
        "MAILGUN_KEY=[redacted:api-key]"
    )
    assert redact("GH_PAT=Vc7Lm2Pw9Xv4Kd8Rt3Yh6Jd") == "GH_PAT=[redacted:token]"
    for text in ("SORT_KEY=created_at", "ROUTING_KEY=orders.created.v1", "PRIMARY_KEY=id"):
        assert redact(text) == text


def test_ordinary_commands_are_let_through_without_a_scan(monkeypatch):
    def scan(text: str) -> list:
        raise AssertionError(f"scanned: {text}")

    monkeypatch.setattr(redaction, "find_secrets", scan)
    redaction._clean.clear()
    for text in (
        "git status --short && git diff --stat",
        "python -m pytest tests/core/test_redaction.py -q -x",
        "docker compose up -d --build web",
        "Run the suite with -p no:cacheprovider",
    ):
        assert redact(text) == text


@pytest.mark.parametrize("text", ORDINARY)
def test_it_leaves_ordinary_agent_text_alone(text: str):
    assert redact(text) == text


def test_it_keeps_the_words_around_a_secret():
    text = "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY && aws s3 ls"

    assert redact(text) == "export AWS_SECRET_ACCESS_KEY=[redacted:aws-key] && aws s3 ls"


def test_a_password_in_a_url_leaves_the_user_and_the_host():
    text = "psql postgres://app:Pg-s3cret-Passw0rd@db.internal:5432/app"

    assert redact(text) == "psql postgres://app:[redacted:password]@db.internal:5432/app"


def test_the_commands_after_a_token_on_its_line_stay():
    text = (
        "echo '//registry.npmjs.org/:_authToken=npm_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2'"
        " > .npmrc && npm publish"
    )

    assert redact(text) == (
        "echo '//registry.npmjs.org/:_authToken=[redacted:npm-token]' > .npmrc && npm publish"
    )


def test_a_private_key_goes_whole_across_its_lines():
    text = next(secret.text for secret in SECRETS if "RSA PRIVATE" in secret.text)

    assert redact(text) == "cat > id_rsa <<EOF\n[redacted:private-key]\nEOF"


def test_a_private_key_cut_off_goes_to_the_end():
    text = (
        "here:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7"
    )

    assert redact(text) == "here:\n[redacted:private-key]"


def test_all_secrets_of_one_text_go_at_once():
    text = "\n".join(secret.text for secret in SECRETS)
    redacted = redact(text)

    for secret in SECRETS:
        assert leaked(secret.value, redacted) is None, secret


def test_redacting_twice_changes_nothing_more():
    for text in [secret.text for secret in SECRETS] + ORDINARY:
        once = redact(text)
        assert redact(once) == once


def test_a_git_sha_a_digest_and_a_uuid_are_not_secrets():
    for text in (
        "3f2a9c1b8e7d6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
        '"3f2a9c1b8e7d6f5a4b3c2d1e0f9a8b7c6d5e4f3a"',
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "123e4567-e89b-12d3-a456-426614174000",
    ):
        assert redact(text) == text


def test_a_hex_value_under_a_secret_name_is_one():
    text = "WEBHOOK_SECRET=3f2a9c1b8e7d6f5a4b3c2d1e0f9a8b7c6d5e4f3a"

    assert redact(text) == "WEBHOOK_SECRET=[redacted:secret]"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("DB_PASSWORD", "password"),
        ("PGPASSWORD", "password"),
        ("MYSQL_PWD", "password"),
        ("apiKey", "api-key"),
        ("x-api-key", "api-key"),
        ("AWS_SECRET_ACCESS_KEY", "aws-key"),
        ("SECRET_KEY_BASE", "secret"),
        ("client_secret", "secret"),
        ("GITHUB_TOKEN", "token"),
        ("refresh_token", "token"),
        ("private_key", "private-key"),
        ("credentials", "credentials"),
        ("token_count", None),
        ("max_tokens", None),
        ("sort_key", None),
        ("secret_name", None),
        ("password_file", None),
        ("pwd", None),
        ("author", None),
    ],
)
def test_it_tells_secret_names_from_others(name: str, kind: str | None):
    assert secret_name_kind(name) == kind


def test_the_real_clients_payloads_come_through_unchanged():
    payloads = [json.loads(path.read_text()) for path in sorted(FIXTURES.rglob("*.json"))] + [
        json.loads(line)
        for path in sorted(FIXTURES.rglob("*.jsonl"))
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    assert len(payloads) > 20

    for payload in payloads:
        assert redact_json(payload) == payload


# --- JSON-like values ----------------------------------------------------------------------


def test_every_string_of_a_value_is_redacted_and_its_keys_kept():
    value = {
        "command": "export GITHUB_TOKEN=ghp_R7mKq2Xv9LbT4nWc8ZpY3sHj6DfG1aQe5Uo0",
        "env": [{"name": "PASSWORD", "value": "x"}, ("AKIAIOSFODNN7EXAMPLE", 3, None, True)],
        "timeout": 120,
    }

    assert redact_json(value) == {
        "command": "export GITHUB_TOKEN=[redacted:github-token]",
        "env": [{"name": "PASSWORD", "value": "x"}, ["[redacted:aws-key]", 3, None, True]],
        "timeout": 120,
    }
    assert value["command"].endswith("Uo0")  # the original is left as it was


def test_a_string_under_a_secret_name_goes_whole():
    value = {"headers": {"X-Api-Key": "plainwords", "password": "hunter22"}, "token": "abc"}

    assert redact_json(value) == {
        "headers": {"X-Api-Key": "[redacted:api-key]", "password": "[redacted:password]"},
        "token": "abc",
    }


# --- bounded work ----------------------------------------------------------------------------


def test_a_huge_string_is_scanned_up_to_the_limit_and_cut_there():
    secret = "AKIAIOSFODNN7EXAMPLE"
    text = "a " * (MAX_TEXT_CHARS // 2 - 4) + "x" * 40 + secret + " tail " + "b" * 5_000_000

    redacted = redact(text)

    assert redacted.endswith(UNSCANNED)
    assert len(redacted) <= MAX_TEXT_CHARS + len(UNSCANNED)
    assert secret not in redacted
    assert "tail" not in redacted
    # The token the limit cut in two is dropped, not kept half.
    assert "xxxx" not in redacted[-100:]


def test_a_scan_reads_each_character_a_bounded_number_of_times(monkeypatch):
    scanned: list[int] = []
    scan = redaction._scan

    def counting(text: str, offset: int):
        scanned.append(len(text))
        return scan(text, offset)

    monkeypatch.setattr(redaction, "_scan", counting)
    # A trigger every few characters, on one line of five megabytes.
    redact("password=Abc123x token " * 250_000)

    assert max(scanned) <= WINDOW
    assert sum(scanned) <= MAX_TEXT_CHARS * WINDOW / (WINDOW - OVERLAP) + WINDOW


def test_a_value_with_too_many_strings_is_scanned_up_to_the_limit():
    value = [f"item {n} AKIAIOSFODNN7EXAMPLE" for n in range(MAX_JSON_STRINGS + 500)]

    redacted = redact_json(value)

    assert redacted[MAX_JSON_STRINGS - 1] == f"item {MAX_JSON_STRINGS - 1} [redacted:aws-key]"
    assert redacted[MAX_JSON_STRINGS:] == [UNSCANNED] * 500


def test_a_value_with_too_many_characters_is_scanned_up_to_the_limit(monkeypatch):
    chunk = "word " * (MAX_TEXT_CHARS // 5)
    value = [chunk] * (MAX_JSON_CHARS // len(chunk) + 3)
    scanned: list[int] = []
    redact_text = redaction.redact

    def counting(text: str, *, limit: int = MAX_TEXT_CHARS) -> str:
        scanned.append(min(len(text), limit))
        return redact_text(text, limit=limit)

    monkeypatch.setattr(redaction, "redact", counting)
    redacted = redact_json(value)

    assert sum(scanned) <= MAX_JSON_CHARS
    assert redacted[-1] == UNSCANNED


def test_a_deeply_nested_value_is_cut_at_the_depth_limit():
    value: list = ["AKIAIOSFODNN7EXAMPLE"]
    for _ in range(5_000):
        value = [value]

    redacted = redact_json(value)

    depth = 0
    while isinstance(redacted, list):
        redacted, depth = redacted[0], depth + 1
    assert redacted == TOO_DEEP
    assert depth == MAX_JSON_DEPTH


def test_a_value_with_too_many_nodes_is_cut():
    value = {"numbers": list(range(MAX_JSON_NODES * 3)), "after": "AKIAIOSFODNN7EXAMPLE"}

    redacted = redact_json(value)

    assert len(redacted["numbers"]) <= MAX_JSON_NODES + 1
    assert redacted["numbers"][-1] == UNSCANNED
    assert redacted["after"] in {UNSCANNED, "[redacted:aws-key]"}


def test_binary_looking_text_comes_back_bounded():
    noise = bytes(range(256)).decode("latin-1") * 40_000

    redacted = redact(noise)

    assert len(redacted) <= MAX_TEXT_CHARS + len(UNSCANNED)


def test_only_texts_without_a_secret_are_remembered_and_only_so_many():
    redaction._clean.clear()
    for secret in SECRETS:
        redact(secret.text)
    for number in range(redaction.CLEAN_TEXTS + 10):
        redact(f"Run the suite, part {number}")

    assert len(redaction._clean) <= redaction.CLEAN_TEXTS
    assert not any(leaked(secret.value, text) for secret in SECRETS for text in redaction._clean)
