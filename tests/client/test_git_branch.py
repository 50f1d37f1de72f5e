"""`agentboard hook` tells the board which branch a session works on, read from `.git/HEAD`."""

from __future__ import annotations

from dashboard.client.hook import git_branch, with_git_branch
from tests.client.conftest import add_worktree, make_repository


def test_the_branch_is_read_from_the_repository_above_the_working_directory(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/feature/dark-mode\n")
    (tmp_path / "src" / "app").mkdir(parents=True)

    assert git_branch(str(tmp_path / "src" / "app")) == "feature/dark-mode"


def test_a_worktree_reads_its_own_head(tmp_path):
    (tmp_path / "repo" / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (tmp_path / "repo" / ".git" / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/fix\n")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {tmp_path}/repo/.git/worktrees/wt\n")

    assert git_branch(str(tmp_path / "wt")) == "fix"


def test_no_branch_outside_a_repository_or_on_a_detached_head(tmp_path):
    assert git_branch(str(tmp_path)) is None or (tmp_path / ".git").exists()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("3f2a9c0d1e4b5a6978c0d1e2f3a4b5c6d7e8f9a0\n")

    assert git_branch(str(tmp_path)) is None


def test_only_session_start_prompts_and_a_new_folder_carry_the_branch(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    start = {"hook_event_name": "SessionStart", "cwd": str(tmp_path), "session_id": "s"}
    tool = {"hook_event_name": "PostToolUse", "cwd": str(tmp_path), "session_id": "s"}

    assert with_git_branch(start)["git_branch"] == "main"
    assert "git_branch" not in with_git_branch(tool)


def test_a_move_into_a_worktree_carries_its_branch(tmp_path):
    shop = make_repository(tmp_path / "shop")
    add_worktree(shop, tmp_path / "dark-mode")
    moved = {
        "hook_event_name": "CwdChanged",
        "cwd": str(tmp_path / "dark-mode"),
        "old_cwd": str(shop),
        "new_cwd": str(tmp_path / "dark-mode"),
        "session_id": "s",
    }

    assert with_git_branch(moved)["git_branch"] == "dark-mode"


def test_a_worktree_made_by_git_reads_its_own_branch(tmp_path):
    shop = make_repository(tmp_path / "shop")
    add_worktree(shop, tmp_path / "dark-mode")

    assert git_branch(str(tmp_path / "dark-mode")) == "dark-mode"
    assert git_branch(str(shop)) == "main"
