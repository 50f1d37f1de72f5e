"""`agentboard install-opencode`: the plugin file in the project or the user's config."""

from __future__ import annotations

from dashboard.client.cli import main
from dashboard.integrations.opencode.install import PLUGIN_SOURCE


def test_it_installs_the_plugin_into_the_project_once(tmp_path, capsys):
    assert main(["install-opencode", "--project", str(tmp_path)]) == 0
    installed = tmp_path / ".opencode" / "plugin" / "agentboard.js"
    assert installed.read_text() == PLUGIN_SOURCE.read_text()
    assert "Installed" in capsys.readouterr().out

    assert main(["install-opencode", "--project", str(tmp_path)]) == 0
    assert "nothing changed" in capsys.readouterr().out


def test_it_replaces_an_older_version_of_its_own_plugin(tmp_path):
    plugin = tmp_path / ".opencode" / "plugin" / "agentboard.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("// Agentboard for opencode (an older version)\n")

    assert main(["install-opencode", "--project", str(tmp_path)]) == 0

    assert plugin.read_text() == PLUGIN_SOURCE.read_text()


def test_remove_takes_out_only_its_plugin(tmp_path):
    main(["install-opencode", "--project", str(tmp_path)])
    other = tmp_path / ".opencode" / "plugin" / "mine.js"
    other.write_text("export const Mine = async () => ({})\n")

    assert main(["install-opencode", "--project", str(tmp_path), "--remove"]) == 0

    assert not (tmp_path / ".opencode" / "plugin" / "agentboard.js").exists()
    assert other.exists()
    assert main(["install-opencode", "--project", str(tmp_path), "--remove"]) == 0


def test_a_file_of_the_same_name_that_is_not_ours_is_left_alone(tmp_path, capsys):
    plugin = tmp_path / ".opencode" / "plugin" / "agentboard.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Someone = async () => ({})\n")

    assert main(["install-opencode", "--project", str(tmp_path)]) == 1

    assert "is not Agentboard's plugin" in capsys.readouterr().err
    assert plugin.read_text().startswith("export const Someone")


def test_user_installs_it_in_the_users_opencode_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    assert main(["install-opencode", "--user"]) == 0

    assert (tmp_path / "config" / "opencode" / "plugin" / "agentboard.js").exists()
