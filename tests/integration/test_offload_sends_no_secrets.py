"""An offload sends Gemini only what a crawl would index, redacted (issue 23, item 3): files inside
the project (real path), not ignored, not secret-bearing; the prompt, piped context and file texts
masked.  A fake ``gemini`` executable records its argv and stdin: no planted secret and no
out-of-project file may reach it, whether asked through the command line or the MCP ``offload`` tool.
"""

from __future__ import annotations

import os

from tests.support import secret_corpus as sc
from tests.support.mcp_client import call, run, serve
from tests.support.offload_helpers import TEST_CONFIG, write_sources

OUTSIDE = "OUTSIDE-THE-PROJECT-" + "c0ffee"


def _plant(tmp_path, project_dir):
    write_sources(project_dir)
    sc.plant(project_dir)
    (project_dir / "src" / "app.py").write_text(
        f"STRIPE_KEY = '{sc.STRIPE}'  # UNIQUE-APP-CONTENT\n\ndef handler(event):\n    return event\n"
    )
    (project_dir / ".gitignore").write_text("local/\n")
    (project_dir / "local").mkdir()
    (project_dir / "local" / "settings.py").write_text("TOKEN = 'x'\n")
    (tmp_path / "outside.txt").write_text(OUTSIDE + "\n")
    os.symlink(project_dir / ".env", project_dir / "notes.txt")  # a harmless name for a secret file
    os.symlink(tmp_path / "outside.txt", project_dir / "link.txt")  # a link out of the project
    os.symlink(tmp_path, project_dir / "up")  # a folder link out of the project
    (project_dir / "contextware_data").mkdir(exist_ok=True)
    import json

    (project_dir / "contextware_data" / "config.json").write_text(json.dumps(TEST_CONFIG))


def _sent(fake) -> str:
    return "\n".join(" ".join(c["argv"]) + "\n" + c["stdin"] for c in fake.calls())


def test_the_command_line_refuses_secret_ignored_and_outside_files_and_redacts_the_rest(
    fake_gemini, tmp_path, project_dir, script
):
    _plant(tmp_path, project_dir)
    refused = [
        ("--files", ".env", "secret_file"),
        ("--files", ".aws/credentials", "secret_file"),
        ("--files", "keys/id_ed25519", "secret_file"),
        ("--files", "certs/server.pem", "secret_file"),
        ("--files", "notes.txt", "secret_file"),
        ("--files", "../outside.txt", "outside_project"),
        ("--files", str(tmp_path / "outside.txt"), "outside_project"),
        ("--files", "link.txt", "outside_project"),
        ("--files", "up/outside.txt", "outside_project"),
        ("--files", "local/settings.py", "ignored_file"),
        ("--files", "contextware_data/config.json", "ignored_file"),
        ("--include-dirs", "..", "outside_project"),
        ("--include-dirs", "up", "outside_project"),
        ("--include-dirs", "local", "ignored_file"),
        ("--include-dirs", "contextware_data", "ignored_file"),
    ]
    for flag, path, code in refused:
        res = script("offload", "--prompt", "Summarise it.", flag, path, input="")
        assert res.returncode == 2, (path, res.stdout, res.stderr[-500:])
        error = res.json["error"]
        assert error["code"] == code, (path, error)
        assert error["message"].startswith(f"{flag}: {path} ") and "\n" not in error["message"], error
    assert fake_gemini.calls() == []  # nothing was sent for any refusal

    # An accepted offload: the prompt, the piped context and the file text are masked before Gemini.
    prompt = f"Why does the maps key {sc.GOOGLE} fail, and is the admin password=hunter2secret right?"
    piped = f"{sc.INLINE['github']}\n{sc.INLINE['private_key']}\n{sc.INLINE['db_password']}"
    res = script("offload", "--prompt", prompt, "--files", "src/app.py", "--include-dirs", "docs", input=piped)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.json["redacted"], res.json
    sent = _sent(fake_gemini)
    assert "UNIQUE-APP-CONTENT" in sent and "docs" in sent  # what may be sent, was
    assert sc.leaks(sent) == [] and "hunter2secret" not in sent and OUTSIDE not in sent
    assert "[REDACTED:" in fake_gemini.calls()[0]["argv"][-1]
    stored = "\n".join(p.read_text() for p in (project_dir / "contextware_data" / "offloads").rglob("*.*"))
    assert sc.leaks(stored) == [] and "hunter2secret" not in stored


def test_the_mcp_offload_tool_sends_no_secret_file_and_no_outside_file(fake_gemini, tmp_path, project_dir):
    _plant(tmp_path, project_dir)

    async def go() -> None:
        async with serve(project_dir) as client:
            for files, code in (
                ([".env"], "secret_file"),
                (["notes.txt"], "secret_file"),
                ([str(tmp_path / "outside.txt")], "outside_project"),
                (["../outside.txt"], "outside_project"),
                (["src/app.py", "infra/prod.tfvars"], "secret_file"),
            ):
                envelope = await call(client, "offload", {"prompt": "Read these.", "files": files}, ok=False)
                assert envelope["error"]["code"] == code, (files, envelope)
            assert fake_gemini.calls() == []
            envelope = await call(
                client,
                "offload",
                {"prompt": f"Is {sc.GOOGLE} valid?", "files": ["src/app.py"], "context": sc.INLINE["slack"]},
            )
            assert envelope["ok"] is True

    run(go)
    sent = _sent(fake_gemini)
    assert "UNIQUE-APP-CONTENT" in sent
    assert sc.leaks(sent) == [] and OUTSIDE not in sent


def test_a_file_whose_name_holds_a_secret_is_never_indexed_nor_sent(fake_gemini, project_dir, script):
    """A token in a file's name would travel with the name (into the index, in the delimiter lines
    Gemini reads): such a file counts as secret-bearing, for the crawl and for an offload."""
    write_sources(project_dir)
    named = project_dir / "notes" / f"deploy-{sc.GITHUB}.md"
    named.parent.mkdir()
    named.write_text("# Deploy notes\n\nRun the release job.\n")
    crawled = script("crawl_project", "--summarizer", "gemini", input="", env={"GEMINI_API_KEY": "test-only"})
    assert crawled.returncode == 0, crawled.stdout[-1000:]
    assert crawled.json["excluded"]["secrets"] == 1, crawled.json
    refused = script("offload", "--prompt", "Read it.", "--files", str(named), input="")
    assert refused.returncode == 2 and refused.json["error"]["code"] == "secret_file", refused.stdout
    everything = _sent(fake_gemini) + crawled.stdout + refused.stdout + sc.table_dump(project_dir)
    assert fake_gemini.calls() and sc.GITHUB not in everything
