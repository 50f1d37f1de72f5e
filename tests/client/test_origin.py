"""The hook commands say which repository and machine a session runs on, read from the git
config without running git; repositories here are made with the real `git` binary."""

from __future__ import annotations

import socket

import pytest

from dashboard.client.origin import (
    HOST_HEADER,
    REPOSITORY_HEADER,
    origin_headers,
    origin_url,
    reporting,
    repository,
    without_credentials,
)
from tests.client.conftest import add_worktree, git, make_repository


def test_the_origin_is_read_from_the_repository_above_the_working_directory(tmp_path):
    shop = make_repository(tmp_path / "shop", "git@github.com:acme/shop.git")
    (shop / "src" / "app").mkdir(parents=True)

    assert repository(str(shop / "src" / "app")) == "git@github.com:acme/shop.git"


def test_a_worktree_reports_the_origin_of_its_main_repository(tmp_path):
    shop = make_repository(tmp_path / "shop", "https://github.com/acme/shop")
    add_worktree(shop, tmp_path / "shop-fix")

    assert (tmp_path / "shop-fix" / ".git").is_file()
    assert repository(str(tmp_path / "shop-fix")) == "https://github.com/acme/shop"


def test_credentials_in_the_url_never_leave_the_machine(tmp_path):
    shop = make_repository(
        tmp_path / "shop", "https://x-access-token:ghp_s3cret@github.com:443/acme/shop.git?t=1#f"
    )
    tools = make_repository(tmp_path / "tools", "https://ghp_s3cret@gitlab.example/acme/tools")

    assert repository(str(shop)) == "https://github.com:443/acme/shop.git"
    assert repository(str(tools)) == "https://gitlab.example/acme/tools"


@pytest.mark.parametrize(
    ("configured", "sent"),
    [
        ("git@github.com:acme/shop.git", "git@github.com:acme/shop.git"),
        ("ssh://git:pw@github.com/acme/shop.git", "ssh://github.com/acme/shop.git"),
        ("https://user@[::1]:8443/shop", "https://[::1]:8443/shop"),
        ("/srv/git/shop.git", "/srv/git/shop.git"),
        ("https://tok@github.com?private_token=abc#x", "https://github.com"),
    ],
)
def test_only_the_secret_parts_of_a_url_are_taken_out(configured, sent):
    assert without_credentials(configured) == sent


def test_a_remote_in_a_folder_of_this_machine_names_no_shared_project(tmp_path):
    for name, remote in [("a", "/srv/git/shop.git"), ("b", "../shop"), ("c", "file:///srv/shop")]:
        make_repository(tmp_path / name, remote)

        assert repository(str(tmp_path / name)) is None


def test_nothing_is_reported_without_a_repository_or_an_origin(tmp_path):
    make_repository(tmp_path / "local")
    make_repository(tmp_path / "forked", "https://github.com/acme/shop")
    git("remote", "rename", "origin", "upstream", cwd=tmp_path / "forked")
    (tmp_path / "plain").mkdir()

    assert repository(str(tmp_path / "local")) is None
    assert repository(str(tmp_path / "forked")) is None
    assert repository(str(tmp_path / "plain")) is None
    assert repository(str(tmp_path / "gone")) is None


def test_a_malformed_config_reports_nothing_and_raises_nothing(tmp_path):
    shop = make_repository(tmp_path / "shop")
    (shop / ".git" / "config").write_bytes(b'[remote "origin"\n\turl = \xff\x00\n[[[')
    (tmp_path / "broken" / ".git").mkdir(parents=True)  # no config at all
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / ".git").write_text("not a gitdir line\n")

    assert repository(str(shop)) is None
    assert repository(str(tmp_path / "broken")) is None
    assert repository(str(tmp_path / "odd")) is None


def test_the_config_is_read_as_git_reads_it():
    config = (
        "[core]\n\turl = wrong\n"
        '[remote "upstream"]\n\turl = wrong-too\n'
        '[Remote "origin"] # a comment\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        '\tURL = "git@host:team/my repo.git" ; trailing comment\n'
        "\turl = second-url-is-only-pushed-to\n"
    )

    assert origin_url(config) == "git@host:team/my repo.git"
    assert origin_url("[remote.origin]\nurl = https://h/r\n") == "https://h/r"
    assert origin_url('[remote "Origin"]\nurl = https://h/other\n') is None


def test_an_unfit_or_over_long_value_is_left_out(tmp_path):
    long = make_repository(tmp_path / "long", "https://github.com/acme/" + "x" * 300)
    markup = make_repository(tmp_path / "markup", "https://github.com/acme/shop\u2028<b>")

    assert REPOSITORY_HEADER not in origin_headers(str(long))
    assert REPOSITORY_HEADER not in origin_headers(str(markup))


def test_both_headers_name_the_repository_and_this_machine(tmp_path):
    shop = make_repository(tmp_path / "shop", "git@github.com:acme/shop.git")

    assert origin_headers(str(shop)) == {
        REPOSITORY_HEADER: "git@github.com:acme/shop.git",
        HOST_HEADER: socket.gethostname(),
    }
    assert origin_headers(None) == {HOST_HEADER: socket.gethostname()}


def test_the_report_can_be_switched_off():
    assert reporting({}) is True
    assert reporting({"AGENTBOARD_REPORT_ORIGIN": "1"}) is True
    for off in ("0", "false", "No", " off "):
        assert reporting({"AGENTBOARD_REPORT_ORIGIN": off}) is False
