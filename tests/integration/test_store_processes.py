"""store.py as a process: @file and stdin, bad input, a load that never loads the model, and
concurrent savers that keep the limit without losing or duplicating rows."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from contextware.storage.project import Project
from contextware.store import kvstore
from tests.support.repo import SCRIPTS
from tests.support.session_store import store_project, store_rows


# -- the script: envelope, exit codes, @file and stdin ---------------------------------------------
def test_script_save_from_file_and_stdin_then_load_list(script, project_dir):
    value = {"rules": ["ignore DEBUG lines", "drop timestamps"], "név": "ü"}
    (project_dir / "rules.json").write_text(json.dumps(value, indent=2), encoding="utf-8")
    saved = script("store", "save", "--namespace", "noise", "--key", "rules", "--data", "@rules.json")
    assert saved.returncode == 0 and saved.json["created"] is True and saved.json["evicted"] == []
    piped = script("store", "save", "--namespace", "noise", "--key", "piped", "--data", "-", input="[1, 2, 3]")
    assert piped.returncode == 0 and piped.json["size"] == 7
    loaded = script("store", "load", "--namespace", "noise", "--key", "rules")
    assert loaded.returncode == 0 and loaded.json == {
        "ok": True,
        "namespace": "noise",
        "key": "rules",
        "data": value,
        "size": loaded.json["size"],
        "updated_at": saved.json["updated_at"],
    }
    listed = script("store", "list", "--namespace", "noise").json
    assert [k["key"] for k in listed["keys"]] == ["piped", "rules"] and "data" not in listed["keys"][0]


def test_script_errors_exit_2_and_write_nothing(script, project_dir):
    bad = script("store", "save", "--namespace", "ns", "--key", "k", "--data", '{"a": [1, 2}')
    assert bad.returncode == 2 and bad.json["error"]["code"] == "bad_json"
    assert "line 1, column 12" in bad.json["error"]["message"]
    missing_file = script("store", "save", "--namespace", "ns", "--key", "k", "--data", "@nope.json")
    assert missing_file.returncode == 2 and "nope.json" in missing_file.json["error"]["message"]
    assert missing_file.json["error"]["code"] == "file_not_found"
    name = script("store", "save", "--namespace", "a b", "--key", "k", "--data", "1")
    assert name.returncode == 2 and name.json["error"]["code"] == "bad_namespace"
    assert not (project_dir / "contextware_data").exists()  # nothing was written, not even the data dir
    not_found = script("store", "load", "--namespace", "ns", "--key", "nothing")
    assert not_found.returncode == 2 and not_found.json["error"]["code"] == "not_found"
    text = script("store", "stats", "--format", "text")
    assert text.returncode == 0 and "0 value(s)" in text.stdout


def test_load_does_not_import_the_embedding_model(project_dir):
    kvstore.save(Project.open(project_dir), "ns", "k", {"a": 1})
    code = textwrap.dedent(f"""
        import runpy, sys
        sys.argv = [{str(SCRIPTS / "store.py")!r}, "load", "--namespace", "ns", "--key", "k"]
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
        except SystemExit as exc:
            assert exc.code == 0, exc.code
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("onnxruntime", "fastembed", "tokenizers")
                       or m == "contextware.storage.embeddings")
        sys.stderr.write("HEAVY=" + ",".join(heavy))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=project_dir, capture_output=True, text=True, timeout=60)
    assert json.loads(out.stdout)["data"] == {"a": 1}
    assert out.stderr.split("HEAVY=")[-1].strip() == "", out.stderr[-2000:]


# -- concurrency -----------------------------------------------------------------------------------
WRITER = textwrap.dedent("""
    import json, sys
    from contextware.storage.project import Project
    from contextware.store import kvstore
    root, worker = sys.argv[1], int(sys.argv[2])
    project = Project.open(root)
    evicted = []
    for i in range(10):
        out = kvstore.save(project, "shared", f"w{worker}-{i}", {"worker": worker, "i": i, "pad": "x" * 50})
        evicted += [e["key"] for e in out["evicted"]]
    print(json.dumps(evicted))
""")


def test_concurrent_saves_keep_the_limit_without_losing_or_duplicating_rows(project_dir):
    store_project(project_dir, store_max_keys_per_namespace=50)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(project_dir), str(w)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(6)
    ]
    evicted: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-3000:]
        evicted += json.loads(out)
    project = Project.open(project_dir)
    ids = [r["id"] for r in store_rows(project)]
    assert len(ids) == 50 and len(set(ids)) == 50
    survivors = {i.split("/", 1)[1] for i in ids}
    assert len(evicted) == 60 - 50 and len(set(evicted)) == len(evicted)
    assert survivors | set(evicted) == {f"w{w}-{i}" for w in range(6) for i in range(10)}
    assert not survivors & set(evicted)
    for key in sorted(survivors)[:3]:
        assert kvstore.load(project, "shared", key)["data"]["pad"] == "x" * 50
