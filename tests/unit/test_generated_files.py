"""Generated, vendored and minified files stay out of the code index by default: .gitattributes
(linguist-generated / linguist-vendored, nested files, un-marking), .gitattributes itself, minified
content; crawl counts what it left out per reason, and config brings each class back."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from contextware.codeindex.attributes import Attributes
from contextware.codeindex.files import check_file, list_project_files
from contextware.codeindex.indexer import crawl, index_files
from contextware.storage.project import Project
from tests.support.source_trees import MODES, make_mode, write

PB2 = '''"""Generated protocol buffer code."""
from google.protobuf import descriptor as _descriptor

DESCRIPTOR = _descriptor.FileDescriptor(name="billing.proto", package="billing")


class InvoiceRequest:
    """A request for one invoice."""
'''


def _tree(root: Path) -> None:
    write(root, "src/app.py", "def main():\n    return 1\n")
    write(root, "src/proto/billing_pb2.py", PB2)
    write(root, "third_party/lib/helper.py", "def helper():\n    return 2\n")
    write(root, "third_party/lib/keep.py", "def keep():\n    return 3\n")
    write(root, "web/bundle.js", "var a=1;" * 2000)  # one 16,000-character line
    write(root, "web/app.js", "export function start() {\n  return 1;\n}\n")
    write(root, ".gitattributes", "*_pb2.py linguist-generated\nthird_party/** linguist-vendored\n")
    write(root, "third_party/lib/.gitattributes", "keep.py -linguist-vendored\n")


def _config(project: Project, **values: object) -> Project:
    project.ensure_data_dir()
    (project.data_dir / "config.json").write_text(json.dumps(values))
    return Project.open(project.root)


@pytest.mark.parametrize("mode", MODES)
def test_listing_leaves_out_marked_files_and_counts_them(project_dir: Path, mode: str) -> None:
    _tree(project_dir)
    make_mode(project_dir, mode)
    excluded: Counter[str] = Counter()
    cands, _ = list_project_files(project_dir, project_dir / "contextware_data", excluded=excluded)
    paths = [c.path for c in cands]
    assert "src/proto/billing_pb2.py" not in paths and ".gitattributes" not in paths
    assert "third_party/lib/helper.py" not in paths
    assert "third_party/lib/keep.py" in paths  # un-marked by the nested .gitattributes
    assert {"src/app.py", "web/app.js", "web/bundle.js"} <= set(paths)  # minified is judged on read
    assert excluded["generated"] == 1 and excluded["vendored"] == 1
    assert excluded["vcs"] == 2  # both .gitattributes files

    back = list_project_files(project_dir, project_dir / "contextware_data", restored=frozenset({"generated"}))[0]
    assert "src/proto/billing_pb2.py" in [c.path for c in back]


@pytest.mark.slow
def test_crawl_reports_each_reason_and_config_brings_classes_back(project: Project) -> None:
    _tree(project.root)
    out = crawl(project, summarizer="local")
    assert sorted(out["indexed_files"]) == ["src/app.py", "third_party/lib/keep.py", "web/app.js"]
    assert out["excluded"] == {"generated": 1, "vcs": 2, "vendored": 1}
    assert out["skipped_reasons"] == {"minified": 1}
    assert {"path": "web/bundle.js", "reason": "minified"} in out["skipped_files"]

    project = _config(project, index_generated=True, index_vendored=True, index_minified=True)
    again = crawl(project, summarizer="local")
    assert sorted(again["indexed_files"]) == [
        "src/proto/billing_pb2.py",
        "third_party/lib/helper.py",
        "web/bundle.js",
    ]
    assert again["excluded"] == {"vcs": 2} and again["skipped"] == 0

    # switched off again: the rows leave the index on the next crawl
    project = _config(project)
    third = crawl(project, summarizer="local")
    assert sorted(third["removed_files"]) == [
        "src/proto/billing_pb2.py",
        "third_party/lib/helper.py",
        "web/bundle.js",
    ]


def test_index_file_names_the_reason(project: Project) -> None:
    _tree(project.root)
    out = index_files(project, [project.root / "src/proto/billing_pb2.py", project.root / ".gitattributes"])
    assert {s["path"]: s["reason"] for s in out["skipped_files"]} == {
        "src/proto/billing_pb2.py": "generated",
        ".gitattributes": "vcs",
    }
    _rel, cand, reason = check_file(project.root, project.data_dir, project.root / "web/bundle.js")
    assert cand is not None and reason is None  # content is judged when the indexer reads it
    assert index_files(project, [project.root / "web/bundle.js"])["skipped_reasons"] == {"minified": 1}


@pytest.mark.parametrize(
    ("lines", "path", "expected"),
    [
        ("*.pb.go linguist-generated=true", "api/v1/svc.pb.go", "generated"),
        ("/gen/*.ts linguist-generated", "gen/client.ts", "generated"),
        ("/gen/*.ts linguist-generated", "src/gen/client.ts", None),  # anchored at its folder
        ("gen/*.ts linguist-generated", "gen/deep/client.ts", None),  # * stops at /
        ("gen/**/*.ts linguist-generated", "gen/deep/er/client.ts", "generated"),
        ("**/vendor/** linguist-vendored", "a/vendor/b/c.js", "vendored"),
        ("vendor/ linguist-vendored", "vendor/c.js", None),  # a folder pattern matches no file
        ("*.js linguist-vendored\nlib.js linguist-vendored=false", "x/lib.js", None),  # last line wins
        ("*.js linguist-generated\n*.js !linguist-generated", "x/lib.js", None),  # unspecified again
        ("[ab].py linguist-generated", "pkg/b.py", "generated"),
        ("# *.py linguist-generated", "a.py", None),
        ("*.py linguist-documentation", "a.py", None),  # other attributes are not ours
    ],
)
def test_gitattributes_patterns(tmp_path: Path, lines: str, path: str, expected: str | None) -> None:
    (tmp_path / ".gitattributes").write_text(lines + "\n")
    assert Attributes(tmp_path).reason(path) == expected
