"""Issue 15, "Secrets": files planted in a temp project, a real crawl, real recall and context output,
real LanceDB tables; no planted secret is found anywhere."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextware.codeindex.indexer import crawl, index_files
from contextware.core.errors import UsageError
from contextware.memory import records
from contextware.memory.briefing import render_fenced, session_context
from contextware.memory.recall import ask
from contextware.storage.project import Project
from contextware.store import kvstore
from tests.support import secret_corpus as sc


def table_dump(project: Project) -> str:
    return sc.table_dump(project.root)


@pytest.mark.slow
def test_secret_files_are_skipped_counted_and_nothing_leaks_into_the_index(project: Project):
    sc.plant(project.root)
    report = crawl(project, summarizer="local")
    assert report["excluded"]["secrets"] == len(sc.SECRET_FILES), report
    indexed = set(report["indexed_files"])
    assert indexed == set(sc.KEPT_FILES), indexed  # .env.example, app/settings.py, app/keys.py stay
    # settings.py is indexed with its docstring token and Stripe key masked, in every column.
    dump = table_dump(project)
    assert sc.leaks(dump) == [] and "[REDACTED:github_token]" in dump


@pytest.mark.slow
def test_secret_files_are_skipped_in_a_git_work_tree_too(project: Project):
    import subprocess

    subprocess.run(["git", "init", "-q", str(project.root)], check=True)
    sc.plant(project.root)
    subprocess.run(["git", "-C", str(project.root), "add", "-A"], check=True)  # tracked by mistake
    report = crawl(project, summarizer="local")
    assert report["excluded"]["secrets"] == len(sc.SECRET_FILES) and set(report["indexed_files"]) == set(sc.KEPT_FILES)
    assert sc.leaks(table_dump(project)) == []


def test_a_secret_file_given_by_name_is_refused_with_its_reason(project: Project):
    sc.plant(project.root)
    out = index_files(project, [str(project.root / ".aws/credentials"), str(project.root / "deploy_key")])
    assert out["skipped_reasons"] == {"secrets": 2} and out["indexed"] == 0


@pytest.mark.slow
def test_config_adds_and_allows_secret_file_patterns(project: Project):
    sc.plant(project.root)
    (project.root / "conf").mkdir()
    (project.root / "conf/vault.conf").write_text(f"token = {sc.GITHUB}\n")
    project.ensure_data_dir()
    (project.data_dir / "config.json").write_text(
        json.dumps({"secret_files": ["*.conf"], "secret_files_allowed": [".npmrc"]})
    )
    report = crawl(Project.open(project.root), summarizer="local")
    assert "conf/vault.conf" not in report["indexed_files"] and ".npmrc" in report["indexed_files"]
    assert report["excluded"]["secrets"] == len(sc.SECRET_FILES)  # one more, one less
    assert sc.leaks(table_dump(project)) == []  # the allowed .npmrc is indexed with its token masked


def test_a_bad_secret_files_config_is_a_clear_error(project: Project):
    project.ensure_data_dir()
    (project.data_dir / "config.json").write_text(json.dumps({"secret_files": "*.pem"}))
    with pytest.raises(Exception) as err:
        crawl(Project.open(project.root), summarizer="local")
    assert getattr(err.value, "code", None) == "bad_config" and "secret_files" in str(err.value)


@pytest.mark.slow
def test_memories_and_store_values_are_redacted_and_recall_and_context_show_no_secret(project: Project):
    sc.plant(project.root)
    crawl(project, summarizer="local")
    for name, text in sc.INLINE.items():
        records.save_fact(project, f"Environment ({name}): {text}", kind="environment", topics=["deploy"])
        records.save_log(project, f"user said: {text}", session_id="s1", role="user")
    records.save_episode(project, f"Rotated {sc.INLINE['aws_secret_key']}", goal=sc.INLINE["npm"], result="success")
    stored = kvstore.save(project, "deploy", "creds", {"env": dict(sc.INLINE), "password": sc.DB_PASSWORD, "n": 3})
    assert stored["redacted"]
    assert kvstore.load(project, "deploy", "creds")["data"]["n"] == 3
    assert sc.leaks(table_dump(project)) == []
    p = Project.open(project.root)
    for query in ("deploy keys passwords tokens", "AWS secret access key", "settings file"):
        for mode in ("summary", "exact"):
            out = ask(p, query, scope="all", limit=20, mode=mode)
            assert sc.leaks(json.dumps(out)) == [], (query, mode)
    ctx = session_context(p, 100_000)
    assert sc.leaks(json.dumps(ctx)) == [] and sc.leaks(render_fenced(ctx)) == []


def test_an_unreadable_or_secret_data_file_is_never_quoted_in_an_error(tmp_path: Path):
    shadow = "root:$6$Xq9PzSecretHashValue:19000:0:99999:7:::"
    with pytest.raises(UsageError) as err:
        kvstore.parse_json(shadow, "The file /etc/shadow")
    assert shadow[:10] not in err.value.message and "$6$" not in err.value.message
    assert "line 1, column 1" in err.value.message


@pytest.mark.slow
def test_exact_mode_never_follows_a_link_swapped_in_after_indexing(project: Project, tmp_path: Path):
    (project.root / "src").mkdir()
    util = project.root / "src/util.py"
    util.write_text('"""Date helpers: parse and format timestamps."""\n\ndef parse_date(s):\n    return s\n')
    crawl(project, summarizer="local")
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    util.unlink()
    os.symlink(outside, util)  # swapped in after indexing
    hits = ask(Project.open(project.root), "date helpers parse timestamps", scope="code", mode="exact")["results"]
    hit = next(h for h in hits if h["file_path"] == "src/util.py")
    assert "content" not in hit and "excerpts" not in hit and "outside the project" in hit["content_note"]
    assert "root:x:0:0" not in json.dumps(hits)
    # A link to a secret-bearing file inside the project is refused too.
    (project.root / ".env").write_text(f"DB_PASSWORD={sc.DB_PASSWORD}\n")
    util.unlink()
    os.symlink(project.root / ".env", util)
    hits = ask(Project.open(project.root), "date helpers parse timestamps", scope="code", mode="exact")["results"]
    hit = next(h for h in hits if h["file_path"] == "src/util.py")
    assert "content" not in hit and "secret" in hit["content_note"] and sc.DB_PASSWORD not in json.dumps(hits)


@pytest.mark.slow
def test_repair_scrubs_secrets_that_older_versions_stored(project: Project, capsys):
    """Rows written as an older version wrote them (no or weaker redaction), then `memory.py repair`."""
    sc.plant(project.root)
    (project.root / ".aws").mkdir(exist_ok=True)
    fact = records.save_fact(project, "The staging database password lives in the vault.", kind="environment")
    episode = records.save_episode(project, "Rotated the keys.", goal="rotate keys", result="success")
    log = records.save_log(project, "what is the redis url?", session_id="old", role="user")
    kvstore.save(project, "deploy", "creds", {"note": "none yet"})
    crawl(project, summarizer="local")
    db = Project.open(project.root).db
    legacy = {
        "facts": (fact["id"], {"text": sc.INLINE["db_password"]}),
        "episodes": (episode["id"], {"summary": sc.INLINE["aws_secret_key"], "goal": sc.INLINE["npm"]}),
        "logs": (log["ids"][0], {"text": sc.INLINE["redis_url"]}),
        "kv": ("deploy/creds", {"data": json.dumps({"password": sc.JSON_PASSWORD, "url": sc.INLINE["mysql_url"]})}),
        "code_index": ("app/keys.py", {"summary": f"Keys helper; token {sc.GITHUB}"}),
    }
    for name, (rid, values) in legacy.items():  # older versions wrote no checksum either
        db.open_table(name).update(where=f"id = '{rid}'", values={**values, "checksum": None})
    assert sc.leaks(table_dump(project))  # the old rows do hold secrets
    from contextware.cli import run

    assert run("memory", ["repair", "--project-root", str(project.root)]) == 0
    report = json.loads(capsys.readouterr().out)["secrets_scrubbed"]
    assert report == {"facts": 1, "episodes": 1, "logs": 1, "kv": 1, "code_index_removed": 1, "offload_files": 0}, (
        report
    )
    assert sc.leaks(table_dump(project)) == []
    hit = ask(Project.open(project.root), "staging database password", scope="memory")["results"][0]
    assert hit["id"] == fact["id"] and "[REDACTED:password_assignment]" in hit["text"]
    again = crawl(Project.open(project.root), summarizer="local")
    assert again["indexed_files"] == ["app/keys.py"]  # the removed row comes back, redacted
    assert run("memory", ["repair", "--project-root", str(project.root)]) == 0
    assert json.loads(capsys.readouterr().out)["secrets_scrubbed"] == dict.fromkeys(report, 0)
