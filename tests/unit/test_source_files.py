"""Which files the code index covers: git and walk modes, ignore files, built-in exclusions, explicit
paths, symlinks and reading."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from contextware.codeindex.files import IgnoreRules, check_file, list_project_files
from contextware.codeindex.source_text import Candidate, read_source
from tests.support.source_trees import MODES, git, make_mode, needs_git, write


def listed(root: Path, data_dir: Path | None = None, paths=None) -> tuple[list[str], dict[str, str]]:
    cands, skipped = list_project_files(root, data_dir or root / "contextware_data", paths)
    return [c.path for c in cands], skipped


def symlink_or_skip(link: Path, target: Path) -> None:
    try:
        link.symlink_to(target)
    except (OSError, NotImplementedError):
        pytest.skip("symlinks are not available")


# -- git mode -------------------------------------------------------------------------------------
@needs_git
def test_git_mode_lists_tracked_and_untracked_but_not_ignored_or_deleted(project_dir: Path) -> None:
    root = project_dir
    write(root, ".gitignore", "*.log\n/generated/\n")
    write(root, "src/a.py")
    write(root, "src/deleted.py")
    write(root, "sub/.gitignore", "secret.txt\n")
    write(root, "sub/keep.txt", "keep\n")
    write(root, "forced.log", "tracked although ignored\n")
    git(root, "init", "-q")
    git(root, "add", ".gitignore", "src", "sub")
    git(root, "add", "-f", "forced.log")
    git(root, "commit", "-qm", "init")
    (root / "src/deleted.py").unlink()
    write(root, "src/untracked.py")
    write(root, "app.log", "ignored\n")
    write(root, "sub/secret.txt", "ignored by the nested .gitignore\n")
    write(root, "generated/gen.py")
    write(root, "sub/generated/kept.py")  # `/generated/` is anchored at the root
    write(root, ".git/info/exclude", "local_only.py\n")
    write(root, "local_only.py")

    paths, skipped = listed(root)
    assert paths == [
        ".gitignore",
        "forced.log",
        "src/a.py",
        "src/untracked.py",
        "sub/.gitignore",
        "sub/generated/kept.py",
        "sub/keep.txt",
    ]
    assert skipped == {}


@needs_git
def test_git_mode_candidates_carry_their_stat(project_dir: Path) -> None:
    path = write(project_dir, "a.py", "print('hi')\n")
    make_mode(project_dir, "git")
    [cand], _ = list_project_files(project_dir, project_dir / "contextware_data")
    st = path.stat()
    assert cand == Candidate("a.py", project_dir.resolve() / "a.py", st.st_mtime, st.st_size)


@needs_git
def test_project_root_in_a_subfolder_of_the_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo, ".gitignore", "*.tmp\n")
    write(repo, "outside.py")
    write(repo, "app/main.py")
    write(repo, "app/scratch.tmp")
    git(repo, "init", "-q")
    paths, _ = listed(repo / "app")
    assert paths == ["main.py"]


@needs_git
def test_git_failure_falls_back_to_the_walk(project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project_dir, ".gitignore", "*.log\n")
    write(project_dir, "a.py")
    write(project_dir, "b.log")
    make_mode(project_dir, "git")
    monkeypatch.setenv("PATH", "")  # `git` cannot be found
    assert listed(project_dir)[0] == [".gitignore", "a.py"]
    assert check_file(project_dir, project_dir / "contextware_data", project_dir / "b.log")[2] == "ignored"


# -- walk mode ------------------------------------------------------------------------------------
def nested_ignore_tree(root: Path) -> None:
    write(root, ".gitignore", "*.log\nlogs/\n# a comment\n\n")
    write(root, "a.py")
    write(root, "a.log")
    write(root, "logs/x.py")
    write(root, "sub/logs/y.py")  # a pattern without a slash matches at any depth
    write(root, "data/logs", "a file named like the folder pattern\n")
    write(root, "sub/.gitignore", "!keep.log\n/only_here.txt\n")
    write(root, "sub/keep.log")
    write(root, "sub/other.log")
    write(root, "sub/only_here.txt")
    write(root, "sub/deeper/only_here.txt")
    write(root, "sub/deeper/.gitignore", "*.log\n")
    write(root, "sub/deeper/keep.log")  # the deeper file wins over sub/.gitignore's negation


NESTED_EXPECTED = [
    ".gitignore",
    "a.py",
    "data/logs",
    "sub/.gitignore",
    "sub/deeper/.gitignore",
    "sub/deeper/only_here.txt",
    "sub/keep.log",
]


def test_walk_applies_nested_gitignores(project_dir: Path) -> None:
    nested_ignore_tree(project_dir)
    make_mode(project_dir, "walk")
    assert listed(project_dir) == (NESTED_EXPECTED, {})
    rules = IgnoreRules.load(project_dir, project_dir / "contextware_data")
    assert rules.reason("logs", is_dir=True) == "ignored"
    assert rules.reason("logs/x.py") == "ignored"
    assert rules.reason("sub/keep.log") is None
    assert rules.reason("./sub/other.log") == "ignored"


@needs_git
def test_walk_and_git_agree_on_nested_gitignores(project_dir: Path) -> None:
    nested_ignore_tree(project_dir)
    make_mode(project_dir, "git", commit=False)
    assert listed(project_dir) == (NESTED_EXPECTED, {})


# -- .contextwareignore and built-in exclusions ---------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_contextwareignore(project_dir: Path, mode: str) -> None:
    root = project_dir
    write(root, ".contextwareignore", "docs/\n*.gen.py\n!build/\n")
    write(root, "src/a.py")
    write(root, "src/b.gen.py")
    write(root, "docs/guide.md", "# guide\n")
    write(root, "build/make.sh", "echo build\n")  # a built-in exclusion re-included by `!build/`
    write(root, "dist/bundle.js")
    make_mode(root, mode)
    assert listed(root)[0] == [".contextwareignore", "build/make.sh", "src/a.py"]
    rules = IgnoreRules.load(root, root / "contextware_data")
    assert rules.reason("docs/guide.md") == "contextwareignore"
    assert rules.reason("src/b.gen.py") == "contextwareignore"
    assert rules.reason("dist/bundle.js") == "build_output"
    assert rules.reason("build", is_dir=True) is None


BUILTIN = {
    # path: reason (None = indexed)
    "src/main.py": None,
    "store/lancedb/x.lance": "data_dir",  # the custom data dir, whatever its name
    "contextware_data/notes.md": "data_dir",  # the default name is excluded anywhere
    "pkg/contextware_data/notes.md": "data_dir",
    ".hg/store.txt": "vcs",
    ".venv/lib/site.py": "virtualenv",
    "myenv/pyvenv.cfg": "virtualenv",  # detected by its marker, not its name
    "myenv/lib/site.py": "virtualenv",
    "env/bin/activate": "virtualenv",
    "infra/env/prod.tf": None,  # `env` without venv markers is ordinary config
    "node_modules/pkg/index.js": "dependencies",
    "web/bower_components/x.js": "dependencies",
    "src/__pycache__/main.cpython-311.pyc": "cache",
    ".pytest_cache/v/cache/nodeids": "cache",
    ".idea/workspace.xml": "editor",
    ".vscode/settings.json": None,
    "build/lib/x.py": "build_output",
    "dist/app.js": "build_output",
    "rust/target/debug/x.rs": "build_output",
    "pkg.egg-info/PKG-INFO": "build_output",
    "htmlcov/index.html": "build_output",
    "uv.lock": "lock_file",
    "web/package-lock.json": "lock_file",
    "web/yarn.lock": "lock_file",
    "Cargo.lock": "lock_file",
    "go.sum": "lock_file",
    "some.lock": "lock_file",
    "web/app.min.js": "minified",
    "web/app.min.css": "minified",
    "web/app.js.map": "minified",
    "assets/logo.png": "binary",
    "lib/native.so": "binary",
    "Main.class": "binary",
    "data/app.sqlite": "binary",
    ".env": "secrets",
    ".env.local": "secrets",
    ".env.example": None,
    "certs/server.pem": "secrets",
}


@pytest.mark.parametrize("mode", MODES)
def test_builtin_exclusions(project_dir: Path, mode: str) -> None:
    root = project_dir
    data_dir = root / "store"
    for rel in BUILTIN:
        write(root, rel)
    if mode == "git":
        make_mode(root, "git", commit=False)
        git(root, "add", "-f", ".")  # tracked files are subject to the built-in exclusions too
        git(root, "commit", "-qm", "all")
    else:
        make_mode(root, mode)
    paths, _ = listed(root, data_dir)
    assert paths == sorted(rel for rel, reason in BUILTIN.items() if reason is None)
    rules = IgnoreRules.load(root, data_dir)
    assert {rel: rules.reason(rel) for rel in BUILTIN} == BUILTIN
    assert rules.reason("store", is_dir=True) == "data_dir"
    assert rules.reason("myenv", is_dir=True) == "virtualenv"


@pytest.mark.parametrize("mode", MODES)
def test_untracked_dependency_folders_are_skipped(project_dir: Path, mode: str) -> None:
    write(project_dir, "a.py")
    make_mode(project_dir, mode)
    write(project_dir, "node_modules/left-pad/index.js")
    write(project_dir, "venv2/pyvenv.cfg")
    write(project_dir, "venv2/lib/python3.11/site-packages/x.py")
    assert listed(project_dir)[0] == ["a.py"]


def test_data_dir_outside_the_root(tmp_path: Path, project_dir: Path) -> None:
    make_mode(project_dir, "walk")
    write(project_dir, "a.py")
    write(project_dir, "contextware_data/old.md")
    assert listed(project_dir, tmp_path / "elsewhere")[0] == ["a.py"]


# -- explicit paths -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_explicit_paths(project_dir: Path, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project_dir
    write(root, ".gitignore", "*.log\nignored_dir/\n")
    write(root, "src/a.py")
    write(root, "src/pkg/b.py")
    write(root, "src/pkg/b.min.js")
    write(root, "src/we[i]rd*.py")  # globs in names are taken literally
    write(root, "src/node_modules/x.js")
    write(root, "src/debug.log")
    write(root, "ignored_dir/c.py")
    write(root, "other/d.py")
    write(root, "uv.lock", "")
    outside = write(tmp_path, "outside.py")
    make_mode(root, mode)
    monkeypatch.chdir(root / "src")  # relative paths are relative to the cwd
    paths, skipped = listed(
        root,
        paths=[
            "pkg",
            "a.py",
            "a.py",
            "we[i]rd*.py",
            root / "other/d.py",
            "debug.log",
            "../ignored_dir",
            "../uv.lock",
            "node_modules/x.js",
            "missing.py",
            outside,
            str(tmp_path),
        ],
    )
    assert paths == ["other/d.py", "src/a.py", "src/pkg/b.py", "src/we[i]rd*.py"]
    assert skipped == {
        "src/debug.log": "ignored",
        "ignored_dir": "ignored",
        "uv.lock": "lock_file",
        "src/node_modules/x.js": "dependencies",
        "src/missing.py": "missing",
        str(outside): "outside_project",
        str(tmp_path): "outside_project",
    }


@pytest.mark.parametrize("mode", MODES)
def test_explicit_root_lists_everything(project_dir: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project_dir, "a.py")
    write(project_dir, "sub/b.py")
    make_mode(project_dir, mode)
    monkeypatch.chdir(project_dir / "sub")
    assert listed(project_dir, paths=["..", "b.py"]) == (["a.py", "sub/b.py"], {})
    assert listed(project_dir, paths=[]) == ([], {})


# -- check_file -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_check_file_reasons(project_dir: Path, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project_dir
    data_dir = root / "contextware_data"
    write(root, ".gitignore", "*.log\n")
    ok = write(root, "src/ok.py", "print(1)\n")
    write(root, "src/big.py", "x" * 200)
    write(root, "src/blob.dat", b"abc\x00def")
    write(root, "src/trace.log")
    write(root, "yarn.lock")
    write(root, "contextware_data/x.json", "{}")
    outside = write(tmp_path, "outside.py")
    make_mode(root, mode)
    rules = IgnoreRules.load(root, data_dir)
    monkeypatch.chdir(root)

    def check(path, **kw):
        return check_file(root, data_dir, path, rules=rules, **kw)

    rel, cand, reason = check("src/ok.py")
    assert (rel, reason) == ("src/ok.py", None)
    assert cand == Candidate("src/ok.py", root.resolve() / "src/ok.py", ok.stat().st_mtime, ok.stat().st_size)
    assert check(root / "src/big.py", max_bytes=100) == ("src/big.py", None, "too_large")
    assert check("src/big.py")[2] is None
    assert check("src/blob.dat") == ("src/blob.dat", None, "binary")
    assert check("src/gone.py") == ("src/gone.py", None, "missing")  # keeps its rel path for deletion
    assert check("src/trace.log") == ("src/trace.log", None, "ignored")
    assert check("yarn.lock") == ("yarn.lock", None, "lock_file")
    assert check("src") == ("src", None, "not_a_file")
    assert check(outside) == (str(outside), None, "outside_project")
    assert check("contextware_data/x.json") == ("contextware_data/x.json", None, "data_dir")
    # without prepared rules
    assert check_file(root, data_dir, "src/ok.py")[2] is None


# -- symlinks -------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_symlinks(project_dir: Path, tmp_path: Path, mode: str) -> None:
    root = project_dir
    secret = write(tmp_path, "elsewhere/secret.py")
    write(tmp_path, "elsewhere/dir/inner.py")
    write(root, "real.py")
    symlink_or_skip(root / "escape.py", secret)
    symlink_or_skip(root / "alias.py", root / "real.py")
    symlink_or_skip(root / "linked_dir", tmp_path / "elsewhere/dir")
    symlink_or_skip(root / "into_data.md", write(root, "contextware_data/notes.md"))
    make_mode(root, mode)
    data_dir = root / "contextware_data"
    assert listed(root)[0] == ["alias.py", "real.py"]
    assert check_file(root, data_dir, root / "escape.py") == ("escape.py", None, "outside_project")
    assert check_file(root, data_dir, root / "into_data.md")[2] == "data_dir"
    _, skipped = listed(root, paths=[root / "escape.py", root / "linked_dir"])
    assert skipped == {"escape.py": "outside_project", "linked_dir": "outside_project"}


def test_symlinked_root(tmp_path: Path, project_dir: Path) -> None:
    """The root may be reached through a symlink (macOS temp dirs): both spellings agree."""
    make_mode(project_dir, "walk")
    write(project_dir, "a.py")
    link = tmp_path / "link"
    symlink_or_skip(link, project_dir)
    data_dir = link / "contextware_data"
    assert check_file(link, data_dir, project_dir / "a.py")[0] == "a.py"
    assert check_file(project_dir, data_dir, link / "a.py")[0] == "a.py"
    assert check_file(link, data_dir, link / "gone.py") == ("gone.py", None, "missing")
    assert listed(link, data_dir, [link])[0] == ["a.py"]


# -- read_source ----------------------------------------------------------------------------------
def candidate(path: Path) -> Candidate:
    st = path.stat()
    return Candidate(path.name, path, st.st_mtime, st.st_size)


def test_read_source_text_and_hash(tmp_path: Path) -> None:
    raw = "def f():\n    return 'é'\n".encode()
    text, digest, reason = read_source(candidate(write(tmp_path, "a.py", raw)))
    assert (text, digest, reason) == (raw.decode(), hashlib.sha256(raw).hexdigest(), None)


def test_read_source_decoding(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbfx = 1\n"
    assert read_source(candidate(write(tmp_path, "bom.py", bom)))[0] == "x = 1\n"
    assert (
        read_source(candidate(write(tmp_path, "legacy.txt", "café “quoted”\n".encode("cp1252"))))[0]
        == "café “quoted”\n"
    )
    assert read_source(candidate(write(tmp_path, "latin.txt", b"caf\xe9 \x81\n")))[0] == "café \x81\n"
    assert (
        read_source(candidate(write(tmp_path, "u16.ps1", "Write-Host 'hi'\r\n".encode("utf-16"))))[0]
        == "Write-Host 'hi'\r\n"
    )


def test_read_source_binary_and_too_large(tmp_path: Path) -> None:
    nul = b"GIF89a\x00\x01\x02"
    text, digest, reason = read_source(candidate(write(tmp_path, "nul.bin", nul)))
    assert (text, digest, reason) == (None, hashlib.sha256(nul).hexdigest(), "binary")
    noisy = bytes(range(1, 256)) * 40  # not UTF-8, many control bytes, no NUL
    assert read_source(candidate(write(tmp_path, "noisy.dat", noisy)))[2] == "binary"
    big = candidate(write(tmp_path, "big.py", "x" * 101))
    assert read_source(big, max_bytes=100) == (None, None, "too_large")
    assert read_source(big)[2] is None
    gone = candidate(write(tmp_path, "gone.py"))
    gone.abs_path.unlink()
    assert read_source(gone) == (None, None, "missing")


# -- speed ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_listing_2000_files_takes_a_few_processes_not_one_per_file(
    project_dir: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What kept a listing fast, counted instead of timed (a timing fails on a loaded machine): a
    constant number of git processes for 2,000 files (bench/crawl_speed.py has the times)."""
    import subprocess

    write(project_dir, ".gitignore", "*.log\nbuild/\n__pycache__/\n*.tmp\n")
    for i in range(2000):
        write(project_dir, f"pkg{i % 20}/sub{i % 7}/mod_{i}.py", "")
    write(project_dir, "node_modules/x/index.js")
    make_mode(project_dir, mode, commit=False)
    started: list[object] = []
    real_popen = subprocess.Popen.__init__

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(args[0] if args else kwargs.get("args"))
        real_popen(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", counted)
    cands, _ = list_project_files(project_dir, project_dir / "contextware_data")
    assert len(cands) == 2001
    assert len(started) <= 4, started


@needs_git
def test_one_git_process_answers_for_a_batch_of_paths(project_dir: Path) -> None:
    """watch and index_file ask git about a whole batch at once; the verdicts match git's own, a
    tracked file is never ignored, and asking about each path afterwards starts no process."""
    write(project_dir, ".gitignore", "*.log\n")
    for rel in ("a.py", "b.log", "kept.log", "sub/c.py"):
        write(project_dir, rel)
    git(project_dir, "init", "-q")
    git(project_dir, "add", "-f", ".gitignore", "a.py", "kept.log")
    rules = IgnoreRules.load(project_dir, project_dir / "contextware_data")
    rels = ["a.py", "b.log", "kept.log", "sub/c.py"]
    rules.ask_git(rels)
    calls = []
    real_git = rules._git
    rules._git = lambda *a, **k: calls.append(a) or real_git(*a, **k)
    assert {r: rules.reason(r) for r in rels} == {"a.py": None, "b.log": "ignored", "kept.log": None, "sub/c.py": None}
    assert calls == []
    fresh = IgnoreRules.load(project_dir, project_dir / "contextware_data")  # one path at a time
    assert fresh.reason("kept.log") is None and fresh.reason("b.log") == "ignored" and fresh.git
