"""The one redaction step: every text an agent (or a person) sends passes here before it is
stored, and so before anything renders, broadcasts or notifies it.

A secret becomes `[redacted:<kind>]` (`[redacted:aws-key]`, `[redacted:password]`…): the lead
sees that something was there, never its value. Detection is detect-secrets' plugins (provider
tokens, private keys, JWTs, basic auth in URLs, quoted keyword assignments and quoted
high-entropy strings), called for their detection only (`analyze_string`: no network
verification, no baseline, no global settings), plus what they miss in agent text: unquoted
`NAME=value` and `"name": "value"` assignments of secret-looking names, `Authorization:` and
`Bearer` credentials, passwords in URLs, whole PEM private key blocks across lines, newer token
formats, long unquoted random strings, and credentials on a command line whatever the vendor
(`curl -u account:secret`, `mysql -pSECRET`, `docker login -p SECRET`, a token-like value of
`SOME_KEY=`), the command and its account left readable.

Not secrets, on purpose: git SHAs and other hex digests (a hex string is a secret only under a
secret-looking name), UUIDs, paths and identifiers, public IP addresses, and options that look
like a credential's elsewhere (`docker run -u 1000:1000`, `ssh -p 2222`, `SORT_KEY=name`).

Speed: most texts (a todo item) hold nothing that could be a secret, and one pass of one
compiled pattern (`_TRIGGER`) shows it. Only the neighbourhood of a trigger is scanned, in
windows of bounded length. Bounds, by construction: at most `MAX_TEXT_CHARS` characters of a
string are scanned (the rest is cut and marked), and a JSON-like value has at most
`MAX_JSON_STRINGS` strings, `MAX_JSON_CHARS` characters, `MAX_JSON_NODES` nodes and
`MAX_JSON_DEPTH` levels scanned (what lies beyond is replaced by a marker).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from detect_secrets.filters.heuristic import is_potential_uuid, is_sequential_string
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

# Characters of one string that are scanned; a longer string is cut there (nothing unscanned
# is kept). Above the largest plan accepted (AGENTBOARD_MAX_PLAN_CHARS, 100,000 by default).
MAX_TEXT_CHARS = 262_144
# A scan looks at windows of at most this many characters, overlapping by OVERLAP so that a
# secret on a window's edge is whole in the next one.
WINDOW = 4_096
OVERLAP = 512
# A JSON-like value (a tool's input): the most strings, characters, nodes and levels scanned.
MAX_JSON_STRINGS = 10_000
MAX_JSON_CHARS = 1_048_576
MAX_JSON_NODES = 100_000
MAX_JSON_DEPTH = 64

MARKER_PREFIX = "[redacted:"
UNSCANNED = "[redacted:unscanned]"
TOO_DEEP = "[redacted:too-deep]"


def marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


# --- what may hold a secret ---------------------------------------------------------------------

# Commands that take a password after a short option of their own, with that option as far
# as the value (`mysql -pSECRET`, `sshpass -p SECRET`, `docker login -p SECRET`). The same
# options of other commands (`ssh -p 2222`, `ls -a`) are not credentials.
_PASSWORD_OPTIONS = (
    (r"mysql(?:dump|admin|import|check|sh|slap|binlog)?|mariadb(?:-\w+)?", "-p"),
    (r"7z[az]?|rar|unrar", "-p"),
    (r"sshpass", r"-p[ \t]*"),
    (r"redis-cli|keydb-cli", r"-a[ \t]+"),
    (r"mongo(?:sh|dump|restore|export|import|stat|top)?", r"-p[ \t]+"),
    (r"sqlcmd|bcp|isql", r"-P[ \t]*"),
    (r"ldap(?:search|add|modify|delete|passwd|whoami|compare|modrdn)", r"-w[ \t]+"),
    (r"zip|unzip|zipcloak", r"-P[ \t]+"),
    # `docker login`, `podman login`, `oc login`, `az login`, `helm registry login`…
    (r"login", r"-p[ \t]+"),
    (r"openssl", r"-pass(?:in|out)?[ \t]+pass:"),
)
# Each command as a word, then anything but the end of its simple command, then its option.
_PASSWORD_COMMANDS = "|".join(
    rf"(?<![\w.-])(?:{command})(?=[ \t])[^\n;&|]{{0,400}}?[ \t]{option}(?=[^\s-])"
    for command, option in _PASSWORD_OPTIONS
)
_PASSWORD_TRIGGER = re.compile(_PASSWORD_COMMANDS)
# Words one of those commands holds: only a text with one is searched for them.
_PASSWORD_COMMAND_WORDS = (
    "mysql", "mariadb", "7z", "rar", "sshpass", "redis-cli", "keydb-cli", "mongo", "sqlcmd",
    "bcp", "isql", "ldap", "zip", "login", "openssl",
)  # fmt: skip
# `curl -u user:secret`, `--user=user:secret`, `http -a user:secret`: a basic-auth pair's
# option (its `-` first and its look-behind after, so a search skips to each `-`).
_PAIR_OPTION = r"-(?<![\w-]-)(?P<option>u|-user|-proxy-user|a|-auth)(?:=|[ \t]*)"
_PAIR_TRIGGER = re.compile(_PAIR_OPTION + r"[\"']?[^\s:\"']{0,200}:")

# Anything a detector below could report starts near one of these: a secret-sounding word or
# assignment, a URL with a user part, a private key's header, or a long run of token characters
# (checked further in `_is_trigger`), or near a credential's option on a command line
# (`_command_line_triggers`). Most texts hold none, and pass with this one search.
_TRIGGER = re.compile(
    r"(?i:passw|passphrase|pass[\"']?\s*[=:]|pwd[\"']?\s*[=:]|key[\"'\]]?\s*[=:]|api.?key"
    r"|secret|token|authoriz|auth[\"']?\s*[=:]|bearer|credential|creds|aws|hooks\.slack)"
    r"|PRIVATE KEY|PuTTY-User"
    r"|://[^\s/@]{1,300}@"
    r"|(?P<run>[A-Za-z0-9+/=_.~-]{20,})"
)
_HAS_DIGIT = re.compile(r"\d")
_HAS_LETTER = re.compile(r"[A-Za-z]")
_HAS_UPPER = re.compile(r"[A-Z]")


def _is_trigger(found: re.Match[str]) -> bool:
    """A word, a URL with a user or a key's header always is; a run of token characters
    maybe (`_is_run_trigger`)."""
    return found.lastgroup != "run" or _is_run_trigger(found.group())


def _is_run_trigger(run: str) -> bool:
    """A run of token characters with letters and digits, as every token format has, and an
    upper case letter or 32 characters or more (a path like `tests/e2e/test_inbox.py` has
    neither)."""
    return (
        bool(_HAS_DIGIT.search(run))
        and bool(_HAS_LETTER.search(run))
        and (len(run) >= 32 or bool(_HAS_UPPER.search(run)))
    )


# --- detect-secrets' plugins --------------------------------------------------------------------

# Each plugin with the kind its findings are shown as. The IP address plugin is left out (an
# address is not a secret), and so is the hex high-entropy one (git SHAs, digests).
_PLUGINS: tuple[tuple[BasePlugin, str], ...] = (
    (AWSKeyDetector(), "aws-key"),
    (ArtifactoryDetector(), "artifactory-token"),
    (AzureStorageKeyDetector(), "azure-key"),
    (BasicAuthDetector(), "password"),
    (CloudantDetector(), "cloudant-key"),
    (DiscordBotTokenDetector(), "discord-token"),
    (GitHubTokenDetector(), "github-token"),
    (GitLabTokenDetector(), "gitlab-token"),
    (IbmCloudIamDetector(), "ibm-key"),
    (IbmCosHmacDetector(), "ibm-key"),
    (JwtTokenDetector(), "jwt"),
    (MailchimpDetector(), "mailchimp-key"),
    (NpmDetector(), "npm-token"),
    (OpenAIDetector(), "openai-key"),
    (PypiTokenDetector(), "pypi-token"),
    (SendGridDetector(), "sendgrid-key"),
    (SlackDetector(), "slack-token"),
    (SoftlayerDetector(), "softlayer-key"),
    (SquareOAuthDetector(), "square-secret"),
    (StripeDetector(), "stripe-key"),
    (TelegramBotTokenDetector(), "telegram-token"),
    (TwilioKeyDetector(), "twilio-key"),
)
_KEYWORD = KeywordDetector()
_BASE64 = Base64HighEntropyString()
_PRIVATE_KEY = PrivateKeyDetector()

# --- what they miss -------------------------------------------------------------------------------

# Newer or other providers' token formats.
_TOKENS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}"), "github-token"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,255}"), "github-token"),
    (re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,255}"), "stripe-key"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), "google-key"),
    (re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}"), "google-token"),
    (re.compile(r"\bsk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_-]{20,}"), "anthropic-key"),
    (
        re.compile(r"\bsk-(?:(?:proj|svcacct|admin)-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{32,}"),
        "openai-key",
    ),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), "npm-token"),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), "huggingface-token"),
    (re.compile(r"\bxapp-\d-[A-Za-z0-9-]{20,}"), "slack-token"),
    (re.compile(r"\bdop_v1_[a-f0-9]{64}\b"), "digitalocean-token"),
    (re.compile(r"\bglsa_[A-Za-z0-9_]{32,}"), "grafana-token"),
)

# A credential in a URL: scheme://user:password@host.
_URL_PASSWORD = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/?#@\"'<>\[\]]{0,200}"
    r":(?P<value>[^\s/?#@\"'<>\[\]]{1,300})@"
)
# An Authorization header's credentials, with or without its scheme.
_AUTHORIZATION = re.compile(
    r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:basic|bearer|token|digest|negotiate|ntlm|apikey)\s+)?"
    r"(?P<value>[A-Za-z0-9._~+/=:-]{8,})"
)
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)")
# `NAME=value`, `NAME: value`, `"name": "value"`, `--name=value`, `name := "value"`.
_ASSIGNMENT = re.compile(
    r"(?<!\w)(?P<name>[A-Za-z_][\w.-]{0,60}?)[\"'\]]{0,2}[ \t]*(?P<op>:=|=>|[!=]==?|=|:)[ \t]*"
    r"(?P<value>\"[^\"\n]{1,500}\"|'[^'\n]{1,500}'|`[^`\n]{1,500}`"
    r"|[^\s\"'`,;&|<>(){}\[\]]{1,500})"
)
# `--password hunter2`: a command-line option of a secret-looking name and its argument.
_OPTION = re.compile(
    r"(?<![\w-])--(?P<name>[A-Za-z][\w-]{0,60})[ \t]+"
    r"(?P<value>[^\s\"'`,;&|<>(){}\[\]-][^\s\"'`;&|<>]{0,500})"
)
# A command-line argument: quoted whole, or unquoted to the end of its word.
_ARGUMENT = r"(?P<arg>'[^'\n]{1,500}'|\"[^\"\n]{1,500}\"|[^\s\"'`;&|<>()]{1,500})"
_USER_PAIR = re.compile(_PAIR_OPTION + _ARGUMENT)
_PASSWORD_OPTION = re.compile(rf"(?:{_PASSWORD_COMMANDS}){_ARGUMENT}")
# The programs whose -u/--user and -a/--auth take `user:password` (elsewhere, as in
# `docker run -u 1000:1000` or `rsync -a host:path`, the pair is seldom one).
_HTTP_CLIENT = re.compile(r"(?<![\w.-])(?:curl|curlie|wget|http|https|xh|xhs)(?![\w.:/-])")
# A user or group name (`www-data`): what `-u user:group` holds outside an HTTP client.
_NAME_LIKE = re.compile(r"[a-z_][a-z_-]*")
_PORT = re.compile(r"\d{1,5}(?:/|\Z)")
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9_.+/=-]{20,500}")
_PIECE_SEPARATOR = re.compile(r"[/._-]")
# A private key, whole: from its header to its footer (or, cut off, to the end of the text).
_PEM_BLOCK = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r".*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d.*?(?:Private-MAC:[^\n]*|\Z)",
    re.DOTALL,
)

# A name's words: `AWS_SECRET_ACCESS_KEY`, `apiKey`, `x-api-key`, `PGPASSWORD`.
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Words after the telling one that do not change what the value is (`SECRET_KEY_BASE`).
_TRAILING = frozenset({"value", "base", "raw", "plain", "plaintext", "str", "string", "b64"})
# `<qualifier>_key` is a secret: `api_key`, `secret_key`, `private_key`… (not `sort_key`).
_KEY_QUALIFIERS = frozenset(
    {
        "api", "access", "secret", "private", "encryption", "signing", "master", "client",
        "service", "account", "auth", "app", "license", "session", "webhook", "deploy", "ssh",
        "gpg", "pgp", "db", "database", "priv", "aws", "gcp", "azure", "google", "openai",
        "anthropic", "stripe", "admin", "root", "shared", "hmac",
    }
)  # fmt: skip
# Values that say what a value is rather than being one.
_NOT_VALUES = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "required", "optional", "str",
        "string", "bytes", "int", "bool", "any", "secret", "password", "token", "redacted",
        "hidden", "masked", "empty", "unset", "changeme", "example", "await", "async", "new",
        "lambda", "function", "yield", "not", "this", "self", "return", "typeof",
    }
)  # fmt: skip
# A reference to a value held elsewhere: `$VAR`, `${VAR}`, `{{ var }}`, `<password>`,
# `%(password)s`, `settings.SECRET_KEY`, `os.environ…`.
_REFERENCE = re.compile(
    r"^(?:\$|%|\{|<|\*+$|x+$)|\$\{|\{\{|^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+$|^process\.env"
)
_DIGITS = re.compile(r"\d+")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")
_LOWER_RUN = re.compile(r"[a-z]{4,}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def secret_name_kind(name: str) -> str | None:
    """The kind of secret a value under this name is (`DB_PASSWORD` → password), or None
    when the name does not sound like one (`token_count`, `sort_key`, `secret_name`)."""
    words = [word.lower() for word in _WORDS.findall(name)]
    while len(words) > 1 and (words[-1] in _TRAILING or words[-1].isdigit()):
        words.pop()
    if not words:
        return None
    last = words[-1]
    before = words[-2] if len(words) > 1 else ""
    if last.endswith(("password", "passwd", "passphrase")) or (last in {"pass", "pwd"} and before):
        kind = "password"
    elif last.endswith("secret"):
        kind = "secret"
    elif last.endswith("token"):
        kind = "token"
    elif last in {"credential", "credentials", "creds"}:
        kind = "credentials"
    elif last.endswith(("apikey", "privatekey", "secretkey", "accesskey")) or (
        last == "key" and before in _KEY_QUALIFIERS
    ):
        kind = "private-key" if "private" in (last, before) else "api-key"
        if before == "secret" or last == "secretkey":
            kind = "secret"
    else:
        return None
    return "aws-key" if "aws" in words else kind


def _value_is_secret(value: str, *, name: str, strict: bool) -> bool:
    """Whether the value of an assignment to a secret-looking name is one: not a reference,
    a placeholder, a type or a small number. `strict` (an unquoted `name: value`, which prose
    writes too) also wants it to look like one: six or more characters with a digit, a symbol
    or mixed case."""
    if len(value) < 4 or MARKER_PREFIX in value:
        return False
    lowered = value.lower()
    if lowered in _NOT_VALUES or lowered == name.lower() or _REFERENCE.search(value):
        return False
    if value != value.strip():
        return False  # a quote that closes one string and opens the next: `"a=" in b["c"]`
    if _IDENTIFIER.fullmatch(value) and secret_name_kind(value) is not None:
        return False  # another variable: `"API_KEY": API_KEY`, `token = self.token`
    if _DIGITS.fullmatch(value) and len(value) <= 8:
        return False
    if strict:
        mixed = value != lowered and value != value.upper()
        symbol = not value.isalnum()
        if len(value) < 6 or not (_HAS_DIGIT.search(value) or symbol or mixed):
            return False
    return True


def looks_random(value: str) -> bool:
    """A long string of token characters that looks random, not like words: letters and
    digits, high entropy (detect-secrets' measure), few runs of lowercase letters, not hex (a
    digest or a git SHA), not a UUID or a sequence."""
    if not (_HAS_DIGIT.search(value) and _HAS_LETTER.search(value)):
        return False
    if _HEX.fullmatch(value) or is_potential_uuid(value) or is_sequential_string(value):
        return False
    if _BASE64.calculate_shannon_entropy(value) <= _BASE64.entropy_limit:
        return False
    worded = sum(len(run) for run in _LOWER_RUN.findall(value))
    return worded * 2 < len(value)


# The last word of an environment variable or a header that may hold a secret (`MAILGUN_KEY`,
# `NPM_AUTH`, `GH_PAT`, but also `SORT_KEY`), with the kind its value is when it looks like a token.
_MAYBE_SECRET_WORDS = {"key": "api-key", "auth": "credentials", "pat": "token"}
_MAYBE_SECRET_ENDINGS = tuple(_MAYBE_SECRET_WORDS)


def _looks_like_token(value: str) -> bool:
    """Twenty token characters or more around a body of sixteen or more, with letters and
    three digits or more, mostly not words, not a UUID or a sequence: a credential's look,
    though not always random enough for `looks_random` (a Twilio auth token is hex). A path
    (`uploads/2024/03/a.png`) or a slug (`v2_users_list_2024`) is made of shorter pieces."""
    if not _TOKEN_LIKE.fullmatch(value) or not _HAS_LETTER.search(value):
        return False
    if sum(char.isdigit() for char in value) < 3 or is_potential_uuid(value):
        return False
    if max(len(piece) for piece in _PIECE_SEPARATOR.split(value)) < 16:
        return False
    if is_sequential_string(value):
        return False
    worded = sum(len(run) for run in _LOWER_RUN.findall(value))
    return worded * 2 < len(value)


# --- finding ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    start: int
    end: int
    kind: str
    # Higher wins where two findings overlap: a provider's name says more than "secret".
    rank: int


_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_+/=-]*")
_TOKEN_CHAR_BEFORE = re.compile(r"[A-Za-z0-9_-]*\Z")
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")
_PROVIDER, _HEADER, _NAMED, _KEYWORD_RANK, _ENTROPY = 5, 4, 3, 2, 1


def _whole_token(text: str, start: int, end: int) -> tuple[int, int]:
    """A token's whole extent, for a pattern that matched only part of it (a Stripe key is
    longer than the 24 characters detect-secrets looks for)."""
    before = _TOKEN_CHAR_BEFORE.search(text, max(0, start - 256), start)
    after = _TOKEN_CHAR.match(text, end, end + 256)
    return (before.start() if before else start), (after.end() if after else end)


def _occurrences(text: str, value: str) -> Iterator[int]:
    at = text.find(value)
    while at >= 0:
        yield at
        at = text.find(value, at + len(value))


def _plugin_findings(plugin: BasePlugin, text: str) -> Iterator[tuple[int, int]]:
    """Where the plugin's patterns find a secret: the capturing groups that hold the value
    (`aws…key…"<40 characters>"`), or the whole match when a group is only the token's
    prefix (`(glpat|gldt)-…`) or there is none."""
    for pattern in plugin.denylist:  # type: ignore[attr-defined]
        for found in pattern.finditer(text):
            groups = [
                found.span(group)
                for group in range(1, (pattern.groups or 0) + 1)
                if found.group(group) and found.start(group) > found.start()
            ]
            for start, end in groups or [found.span()]:
                value = text[start:end]
                # Some patterns take the character before and after the token with them.
                stripped = value.strip(" \t\"'=:")
                start += value.index(stripped) if stripped else 0
                # npm's pattern ends in `.+`: the rest of the line, the commands after a token.
                stripped = stripped.split(None, 1)[0].rstrip("\"'") if stripped else stripped
                end = start + len(stripped)
                if len(stripped) < 8 or MARKER_PREFIX in stripped:
                    continue
                if isinstance(plugin, JwtTokenDetector) and not plugin.is_formally_valid(stripped):
                    continue
                yield start, end


def _scan(text: str, offset: int) -> Iterator[Finding]:
    """Every secret in one window of text, with positions counted from `offset`."""
    for plugin, kind in _PLUGINS:
        # A password in a URL may be a provider's token, which says more.
        rank = _HEADER if isinstance(plugin, BasicAuthDetector) else _PROVIDER
        for start, end in _plugin_findings(plugin, text):
            start, end = _whole_token(text, start, end)
            yield Finding(offset + start, offset + end, kind, rank)
    for pattern, kind in _TOKENS:
        for found in pattern.finditer(text):
            start, end = _whole_token(text, *found.span())
            yield Finding(offset + start, offset + end, kind, _PROVIDER)
    for pattern, kind in ((_URL_PASSWORD, "password"), (_AUTHORIZATION, "authorization")):
        for found in pattern.finditer(text):
            value = found.group("value")
            if MARKER_PREFIX in value or _REFERENCE.search(value):
                continue
            if pattern is _URL_PASSWORD or _value_is_secret(value, name=kind, strict=True):
                yield Finding(
                    offset + found.start("value"), offset + found.end("value"), kind, _HEADER
                )
    for found in _BEARER.finditer(text):
        if _HAS_DIGIT.search(found.group("value")):
            start, end = found.span("value")
            yield Finding(offset + start, offset + end, "token", _HEADER)
    yield from _assignments(text, offset)
    yield from _command_line(text, offset)
    for value in _KEYWORD.analyze_string(text):
        if len(value) >= 4 and MARKER_PREFIX not in value and not _REFERENCE.search(value):
            for at in _occurrences(text, value):
                yield Finding(offset + at, offset + at + len(value), "secret", _KEYWORD_RANK)
    for value in _BASE64.analyze_string(text):
        if len(value) >= 20 and looks_random(value):
            for at in _occurrences(text, value):
                yield Finding(offset + at, offset + at + len(value), "high-entropy", _ENTROPY)
    for found in _RANDOM_RUN.finditer(text):
        if looks_random(found.group()):
            yield Finding(offset + found.start(), offset + found.end(), "high-entropy", _ENTROPY)


def _assignments(text: str, offset: int) -> Iterator[Finding]:
    for pattern in (_ASSIGNMENT, _OPTION):
        for found in pattern.finditer(text):
            name = found.group("name")
            kind = secret_name_kind(name)
            maybe = None
            if kind is None and _may_name_a_secret(name, found):
                maybe = _MAYBE_SECRET_WORDS.get(_WORDS.findall(name)[-1].lower())
            if kind is None and maybe is None:
                continue
            value, start, end = found.group("value"), found.start("value"), found.end("value")
            quoted = value[0] in "\"'`"
            if quoted:
                value, start, end = value[1:-1], start + 1, end - 1
            elif end < len(text) and text[end] in "([":
                continue  # a call or a subscript: `password=getpass()`, `os.environ["X"]`
            if maybe is not None:
                if _looks_like_token(value) and MARKER_PREFIX not in value:
                    yield Finding(offset + start, offset + end, maybe, _NAMED)
                continue
            strict = not quoted and (pattern is _OPTION or found.group("op") == ":")
            if _value_is_secret(value, name=name, strict=strict):
                yield Finding(offset + start, offset + end, kind, _NAMED)


def _may_name_a_secret(name: str, found: re.Match[str]) -> bool:
    """An environment variable or a header whose name ends as a secret's may hold one
    (`MAILGUN_KEY=`, `Ocp-Apim-Subscription-Key: `); a variable in code seldom does
    (`idempotency_key = "toolu_01…"`)."""
    return (
        (name.isupper() or "-" in name)
        and name.lower().endswith(_MAYBE_SECRET_ENDINGS)
        and found.re is _ASSIGNMENT
        and found.group("op") in {"=", ":"}
    )


def _command_line(text: str, offset: int) -> Iterator[Finding]:
    """A basic-auth pair's password (`curl -u user:secret`; the user is kept unless it is the
    key itself, as in `curl -u sk_live_…:`), and a password given to a command's own option
    (`mysql -pSECRET`, `sshpass -p SECRET`, `docker login -p SECRET`)."""
    pairs = _USER_PAIR.finditer(text) if _may_hold_pair(text) else ()
    for found in pairs:
        arg, start = found.group("arg"), found.start("arg")
        if arg[0] in "\"'":
            arg, start = arg[1:-1], start + 1
        # A user redacted already (`[redacted:twilio-key]:…`) has a colon of its own.
        colon = arg.find(":", arg.find("]") + 1 if arg.startswith(MARKER_PREFIX) else 0)
        if colon < 0:
            continue
        user, value = arg[:colon], arg[colon + 1 :]
        http = _sent_by_http_client(text, found.start())
        if found.group("option") == "a" and not http:
            continue
        if value and _pair_value_is_secret(user, value, http=http):
            at = start + len(user) + 1
            yield Finding(offset + at, offset + at + len(value), "password", _HEADER)
        elif not value and http and _looks_like_token(user) and MARKER_PREFIX not in user:
            yield Finding(offset + start, offset + start + len(user), "api-key", _HEADER)
    options = _PASSWORD_OPTION.finditer(text) if _may_hold_password_option(text) else ()
    for found in options:
        value, start, end = found.group("arg"), found.start("arg"), found.end("arg")
        if value[0] in "\"'":
            value, start, end = value[1:-1], start + 1, end - 1
        if _value_is_secret(value, name="password", strict=False):
            yield Finding(offset + start, offset + end, "password", _HEADER)


def _sent_by_http_client(text: str, at: int) -> bool:
    """Whether the simple command the option at `at` belongs to is an HTTP client's."""
    begins = max(text.rfind(separator, 0, at) for separator in ";&|\n(`")
    return _HTTP_CLIENT.search(text, begins + 1, at) is not None


def _pair_value_is_secret(user: str, value: str, *, http: bool) -> bool:
    """Whether the second half of `user:value` is a password: any value given to an HTTP
    client; elsewhere (`docker run -u app:www-data`, `rsync -u host:/srv`) only one that looks
    like a password, not a group's name, a number or a path."""
    if value == user or value[0] in "/~." or MARKER_PREFIX in value or _REFERENCE.search(value):
        return False
    if _PORT.match(value):
        return False  # a host and its port: `-u localhost:8080/api`
    if http:
        return _value_is_secret(value, name="password", strict=False)
    return _value_is_secret(value, name="password", strict=True) and not _NAME_LIKE.fullmatch(value)


def _command_line_triggers(text: str) -> Iterator[re.Match[str]]:
    """A credential's options on a command line (`curl -u user:`, `mysql … -p`), searched for
    only in a text with a word that one holds: most commands have none."""
    if _may_hold_pair(text):
        yield from _PAIR_TRIGGER.finditer(text)
    if _may_hold_password_option(text):
        yield from _PASSWORD_TRIGGER.finditer(text)


def _may_hold_pair(text: str) -> bool:
    # Every option of _PAIR_OPTION holds `-u` or `-a`.
    return ":" in text and ("-u" in text or "-a" in text)


def _may_hold_password_option(text: str) -> bool:
    if not ("-p" in text or "-a" in text or "-P" in text or "-w" in text):
        return False
    lowered = text.lower()
    return any(word in lowered for word in _PASSWORD_COMMAND_WORDS)


def _windows(text: str, skip: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The stretches of text to scan: around each trigger (outside `skip`), within its line,
    from OVERLAP characters before it to at most WINDOW after; merged, then cut into
    overlapping windows of at most WINDOW characters. Every search here is bounded too."""
    spans: list[tuple[int, int]] = []
    triggers = [found for found in _TRIGGER.finditer(text) if _is_trigger(found)]
    command_line = list(_command_line_triggers(text))
    if command_line:
        triggers = sorted(triggers + command_line, key=lambda found: found.start())
    for found in triggers:
        if any(a <= found.start() < b for a, b in skip):
            continue
        low = max(0, found.start() - OVERLAP)
        start = max(low, text.rfind("\n", low, found.start()) + 1)
        high = min(len(text), max(found.end(), found.start() + WINDOW - OVERLAP) + OVERLAP)
        end = text.find("\n", found.end(), high)
        end = high if end < 0 else end
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    for start, end in spans:
        while end - start > WINDOW:
            yield start, start + WINDOW
            start += WINDOW - OVERLAP
        yield start, end


def find_secrets(text: str) -> list[Finding]:
    """The secrets in `text` (scanned whole: callers bound it), without overlaps, in order."""
    findings: list[Finding] = []
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        if any(True for _ in _PRIVATE_KEY.analyze_string(text)):
            findings.extend(
                Finding(found.start(), found.end(), "private-key", _PROVIDER + 1)
                for found in _PEM_BLOCK.finditer(text)
            )
    skip = [(finding.start, finding.end) for finding in findings]
    for start, end in _windows(text, skip):
        findings.extend(_scan(text[start:end], start))
    return _without_overlaps(findings)


def _without_overlaps(findings: list[Finding]) -> list[Finding]:
    """Overlapping findings become one, covering them all, named by the highest ranked."""
    merged: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.start, -f.end)):
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            best = last if last.rank >= finding.rank else finding
            merged[-1] = Finding(last.start, max(last.end, finding.end), best.kind, best.rank)
        else:
            merged.append(finding)
    return merged


# --- redacting ----------------------------------------------------------------------------------

_LAST_TOKEN = re.compile(r"\S{0,1024}\Z")


def _bounded(text: str, limit: int) -> tuple[str, bool]:
    """At most `limit` characters of `text`, and whether it was cut. A token cut in two at the
    bound could be a secret no detector recognises any more: it goes too."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    last = _LAST_TOKEN.search(head)
    return (head[: last.start()] if last else head), True


# Lower case, every trigger word of `_TRIGGER` contains one of these: a text with none of them
# and no run of token characters is let through after a few substring searches.
_TRIGGER_WORDS = (
    "pass", "pwd", "key", "secret", "token", "auth", "bearer", "cred", "aws", "hooks.slack",
    "putty", "://",
)  # fmt: skip
_RUN = re.compile(r"[A-Za-z0-9+/=_.~-]{20,}")


def _may_hold_secret(text: str) -> bool:
    lowered = text.lower()
    if any(word in lowered for word in _TRIGGER_WORDS):
        return True
    if any(_is_run_trigger(run.group()) for run in _RUN.finditer(text)):
        return True
    # Every option of a credential on a command line starts with `-`: most texts have none.
    return "-" in text and next(_command_line_triggers(text), None) is not None


# Short texts found to hold no secret, remembered: an agent sends its whole list again with
# each change, and a text stored redacted is read back and compared. Only clean texts are kept
# (never a secret), at most CLEAN_TEXTS of them, forgotten all at once when full.
CLEAN_TEXTS = 4_096
CLEAN_TEXT_CHARS = 512
_clean: dict[str, None] = {}


def redact(text: str, *, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` with every secret in it replaced by `[redacted:<kind>]`. Text past `limit`
    characters is not scanned, and not kept: it becomes `[redacted:unscanned]`."""
    if len(text) <= limit and text in _clean:
        return text
    text, cut = _bounded(text, limit)
    findings = find_secrets(text) if _may_hold_secret(text) else []
    if findings:
        parts, at = [], 0
        for finding in findings:
            parts += [text[at : finding.start], marker(finding.kind)]
            at = finding.end
        parts.append(text[at:])
        text = "".join(parts)
    elif not cut and len(text) <= CLEAN_TEXT_CHARS:
        if len(_clean) >= CLEAN_TEXTS:
            _clean.clear()
        _clean[text] = None
    return text + UNSCANNED if cut else text


def redact_named(name: str, value: str, *, limit: int = MAX_TEXT_CHARS) -> str:
    """A string value under a key: all of it is the secret when the key names one
    (`{"password": "hunter2"}`), else what `redact` finds in it."""
    kind = secret_name_kind(name) if name else None
    if kind is not None and _value_is_secret(value, name=name, strict=False):
        return marker(kind)
    return redact(value, limit=limit)


def redact_json(value: Any) -> Any:
    """A copy of a JSON-like value with every string in it redacted (keys are kept; a string
    under a secret-looking key is redacted whole). Bounded by construction: past
    MAX_JSON_NODES nodes, the rest of a list or object is left out; past MAX_JSON_STRINGS
    strings or MAX_JSON_CHARS characters, a string becomes `[redacted:unscanned]`; deeper than
    MAX_JSON_DEPTH, a list or object becomes `[redacted:too-deep]`."""
    budget = _Budget()
    root: list[Any] = [None]
    # (the container, the place in it, the value to copy there, the key above it, its depth)
    stack: list[tuple[Any, Any, Any, str, int]] = [(root, 0, value, "", 0)]
    while stack:
        parent, place, node, key, depth = stack.pop()
        parent[place] = budget.copy(node, key, depth, stack)
    return root[0]


@dataclass
class _Budget:
    # Nodes are counted when their container takes them in, so no container takes in more
    # than what is left: the root is the first.
    nodes: int = 1
    strings: int = 0
    chars: int = 0

    def copy(self, node: Any, key: str, depth: int, stack: list[Any]) -> Any:
        if isinstance(node, str):
            return self.text(node, key)
        if not isinstance(node, dict | list | tuple):
            return node
        if depth >= MAX_JSON_DEPTH:
            return TOO_DEEP
        room = max(0, MAX_JSON_NODES - self.nodes)
        children = list(islice(node.items() if isinstance(node, dict) else enumerate(node), room))
        copy: Any = dict.fromkeys(k for k, _ in children) if isinstance(node, dict) else []
        if isinstance(copy, list):
            copy.extend([None] * len(children))
            if len(children) < len(node):
                copy.append(UNSCANNED)
        # Pushed in reverse, so popped in order: the budget goes to the first strings.
        for place, child in reversed(children):
            stack.append((copy, place, child, place if isinstance(place, str) else key, depth + 1))
        self.nodes += len(children)
        return copy

    def text(self, node: str, key: str) -> str:
        self.strings += 1
        room = min(MAX_TEXT_CHARS, MAX_JSON_CHARS - self.chars)
        if not node:
            return node
        if self.strings > MAX_JSON_STRINGS or room <= 0:
            return UNSCANNED
        self.chars += min(len(node), room)
        return redact_named(key, node, limit=room)
