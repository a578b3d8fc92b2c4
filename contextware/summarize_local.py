"""Local, model-free file summaries for the code index.

Symbols come from tree-sitter (grammars bundled with tree-sitter-language-pack, imported lazily), with
Python's ``ast`` as a fallback; the summary is a compact paragraph meant for search, never for display
fidelity. Nothing here raises on odd input: it degrades to whatever can be extracted.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Any

SUMMARY_LIMIT = 1200
MAX_SYMBOLS = 200
_LEAD_LIMIT = 400
_DOC_LIMIT = 160
_MAX_PARSE_CHARS = 1_000_000

LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".inl": "cpp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".ru": "ruby",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".ksh": "bash",
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".rst": "rst", ".txt": "text",
    ".json": "json", ".jsonc": "json", ".json5": "json", ".yaml": "yaml", ".yml": "yaml",
    ".toml": "toml", ".ini": "ini", ".cfg": "ini", ".conf": "ini", ".env": "dotenv",
    ".xml": "xml", ".html": "html", ".htm": "html", ".css": "css", ".scss": "scss", ".less": "less",
    ".sql": "sql", ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift", ".cs": "csharp",
    ".php": "php", ".scala": "scala", ".lua": "lua", ".pl": "perl", ".pm": "perl", ".r": "r",
    ".dart": "dart", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell",
    ".clj": "clojure", ".vue": "vue", ".svelte": "svelte", ".tf": "hcl", ".hcl": "hcl",
    ".proto": "proto", ".graphql": "graphql", ".gql": "graphql", ".dockerfile": "dockerfile",
    ".mk": "make", ".cmake": "cmake", ".gradle": "groovy", ".groovy": "groovy",
    ".ps1": "powershell", ".bat": "batch", ".cmd": "batch", ".csv": "csv", ".zig": "zig",
    ".ml": "ocaml", ".jl": "julia", ".ipynb": "json",
    # special file names (matched on the whole base name)
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make",
    "Dockerfile": "dockerfile", "Containerfile": "dockerfile",
    "Rakefile": "ruby", "Gemfile": "ruby", "Vagrantfile": "ruby", "Podfile": "ruby",
    "Brewfile": "ruby", "CMakeLists.txt": "cmake", "Jenkinsfile": "groovy",
    "BUILD": "starlark", "BUILD.bazel": "starlark", "WORKSPACE": "starlark",
    ".bashrc": "bash", ".bash_profile": "bash", ".zshrc": "bash", ".profile": "bash",
}
_GRAMMARS = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "ruby", "bash"}
_SHEBANGS = {"python": "python", "bash": "bash", "sh": "bash", "zsh": "bash", "dash": "bash",
             "ksh": "bash", "node": "javascript", "nodejs": "javascript", "deno": "typescript",
             "bun": "javascript", "ruby": "ruby", "perl": "perl"}


@dataclass
class LocalSummary:
    language: str | None
    summary: str
    symbols: list[str]


def detect_language(path: str, first_line: str | None = None) -> str | None:
    """Language from the file name, else from a shebang (read from disk when not given)."""
    name = os.path.basename(path)
    if name in LANGUAGES:
        return LANGUAGES[name]
    if name.startswith(("Dockerfile.", "Containerfile.")):
        return "dockerfile"
    ext = os.path.splitext(name)[1].lower()
    if ext in LANGUAGES:
        return LANGUAGES[ext]
    if first_line is None:
        try:
            with open(path, "rb") as f:
                first_line = f.read(256).decode("utf-8", "replace")
        except OSError:
            return None
    return _shebang_language(first_line)


def _shebang_language(text: str) -> str | None:
    m = re.match(r"#!\s*(\S+)(.*)", text.split("\n", 1)[0])
    if not m:
        return None
    prog, rest = os.path.basename(m.group(1)), m.group(2).split()
    if prog == "env":  # "#!/usr/bin/env -S node --flag": the first non-option word
        prog = next((w for w in rest if not w.startswith("-") and "=" not in w), "")
    return _SHEBANGS.get(re.sub(r"[\d.]+$", "", os.path.basename(prog)))


# ---------------------------------------------------------------- text helpers

# Patterns stay strings: compiling them at import costs milliseconds; re caches them on first use.
_DIRECTIVE = (
    r"(?i)(!|-\*-|vim?:|ex:|eslint[- ](disable|enable)|eslint\s+[\w@/-]+\s*:|@ts-|go:build|\+build"
    r"|shellcheck|frozen_string_literal|(en)?coding[:=]|pylint:|type:\s*ignore|noqa|prettier-ignore|jshint"
    r"|(?-i:global)\s+\w+(\s*,\s*\w+)*\s*$|#(end)?region\b|clang-format|NOLINT|@flow|@jsx|istanbul ignore"
    r"|c8 ignore|nolint|rubocop:|fmt:\s*(on|off)|isort:|<reference\s|[-=*#~_+/ ]+$)"
)
_LICENSE = r"(?i)copyright|licen[cs]ed?\b|spdx-license|all rights reserved"
_SECTION = (r"^(@\w+|:param|:return|(Args|Arguments|Returns?|Raises|Parameters|Yields|Examples?"
            r"|Usage|Notes?|Attributes|See Also)\s*:?\s*$|-{3,}$)")
_CONST = r"_*[A-Z][A-Z0-9_]+"


def _clean_comment(raw: str) -> str:
    out = []
    for line in raw.splitlines():
        s = re.sub(r"^(/\*+!?|\*+/|\*+(?!/)|//[/!]?|#+|--|;+|%+)", "", line.strip())
        s = re.sub(r"\*+/$", "", s).strip()
        if s and re.match(_DIRECTIVE, s):
            continue
        out.append(s)
    return "\n".join(out).strip()


def _cut(text: str, limit: int) -> str:
    """Cut at a word boundary so the result, ellipsis included, fits in ``limit``."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:—-") + "…"


def _sentences(text: str, count: int, limit: int, first_paragraph: bool = False) -> str:
    kept = []
    for line in text.splitlines():
        s = line.strip()
        if re.match(_SECTION, s) or (first_paragraph and not s and kept):
            break
        kept.append(s)
    flat = " ".join(" ".join(kept).split())
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`\[])", flat)
    return _cut(" ".join(parts[:count]), limit)


def _meaningful_lines(text: str, count: int = 8) -> list[str]:
    out = []
    for line in text.splitlines()[:400]:
        s = line.strip()
        if re.search(r"[A-Za-z0-9]", s) and not re.match(_DIRECTIVE, s.lstrip("#/;* ")):
            out.append(_cut(" ".join(s.split()), 160))
            if len(out) >= count:
                break
    return out


def _q(container: str | None, name: str) -> str:
    return f"{container}.{name}" if container else name


# ---------------------------------------------------------------- extraction

@dataclass
class _Def:
    name: str
    kind: str  # "const" entries are symbols only, never listed under "Defines"
    container: str | None  # the enclosing type, None at top level and in namespaces
    node: Any = None  # outer node (where a preceding comment attaches)
    inner: Any = None  # the definition itself (Python docstrings live there)
    doc: str | None = None


_COMMENTS = {"comment", "line_comment", "block_comment"}
_parsers = threading.local()  # a tree-sitter Parser must not be shared between threads


def _parse(grammar: str, src: bytes) -> Any:
    cache = _parsers.__dict__.setdefault("cache", {})
    if grammar not in cache:
        from tree_sitter_language_pack import get_parser

        cache[grammar] = get_parser(grammar)
    return cache[grammar].parse(src)


def _end_row(node: Any) -> int:
    row, col = node.end_point
    return row - 1 if col == 0 and row > node.start_point[0] else row  # Rust line comments own their "\n"


class _Extractor:
    def __init__(self, grammar: str, src: bytes) -> None:
        self.grammar, self.src = grammar, src
        self.defs: list[_Def] = []
        self.root = _parse(grammar, src).root_node

    def text(self, node: Any) -> str:
        return node.text.decode("utf-8", "replace") if node is not None else ""

    def name(self, node: Any, field: str = "name") -> str:
        return self.text(node.child_by_field_name(field))

    def add(self, name: str, kind: str, node: Any, container: str | None = None, inner: Any = None) -> None:
        if name:
            self.defs.append(_Def(name, kind, container, node, inner))

    def run(self) -> list[_Def]:
        nodes = self.root.named_children
        {"python": self.python, "go": self.go, "rust": self.rust, "java": self.java, "ruby": self.ruby,
         "bash": self.bash, "c": self.c, "cpp": self.c}.get(self.grammar, self.js)(nodes, None)
        return self.defs

    # -- comments
    def doc_before(self, node: Any) -> str:
        parts, cur, prev = [], node, node.prev_named_sibling
        while prev is not None and prev.type in ("attribute_item", "decorator", "annotation"):
            cur, prev = prev, prev.prev_named_sibling
        while prev is not None and prev.type in _COMMENTS and _end_row(prev) >= cur.start_point[0] - 1:
            text = self.text(prev)
            before = prev.prev_named_sibling
            if text.startswith(("//!", "/*!")) or (
                    before is not None and before.type not in _COMMENTS and _end_row(before) == prev.start_point[0]):
                break  # a module doc comment, or a trailing comment of the previous statement
            parts.append(text)
            cur, prev = prev, before
        return _clean_comment("\n".join(reversed(parts)))

    def lead(self, first_def: Any) -> str:
        """The file's leading comment block: before the first definition, not attached to it."""
        limit = first_def.start_byte if first_def is not None else len(self.src)
        items = []
        for n in self.root.named_children[:200]:
            if n.start_byte >= limit:
                break
            items.extend(n.named_children if n.type in ("preproc_ifdef", "preproc_if") else [n])
        runs: list[list[Any]] = []
        for n in items:
            if n.type in _COMMENTS and n.start_byte < limit:
                if runs and runs[-1] and n.start_point[0] <= _end_row(runs[-1][-1]) + 1:
                    runs[-1].append(n)
                else:
                    runs.append([n])
            elif runs and runs[-1]:
                runs.append([])
        for run in filter(None, runs):
            raw = "\n".join(self.text(n) for n in run)
            attached = first_def is not None and first_def.start_point[0] <= _end_row(run[-1]) + 1
            text = _clean_comment(raw)
            if text and not re.search(_LICENSE, text) and (not attached or raw.startswith(("//!", "/*!"))):
                return text
        return ""

    # -- Python
    def python(self, nodes: list[Any], cls: str | None) -> None:
        for outer in nodes:
            n = outer.child_by_field_name("definition") if outer.type == "decorated_definition" else outer
            t = n.type if n is not None else ""
            if t == "class_definition":
                name = _q(cls, self.name(n))
                self.add(name, "class", outer, cls, n)
                body = n.child_by_field_name("body")
                if body is not None:
                    self.python(body.named_children, name)
            elif t == "function_definition":
                self.add(_q(cls, self.name(n)), "def", outer, cls, n)
            elif cls is None and t == "assignment":
                left = n.child_by_field_name("left")
                if left is not None and left.type == "identifier" and re.fullmatch(_CONST, self.text(left)):
                    self.add(self.text(left), "const", n)
            elif cls is None and t in ("if_statement", "try_statement", "with_statement"):
                for c in n.named_children:
                    blocks = [c] if c.type == "block" else [b for b in c.named_children if b.type == "block"]
                    for b in blocks:
                        self.python(b.named_children, None)

    def py_docstring(self, node: Any) -> str | None:
        body = node.child_by_field_name("body") if node is not None and node.type != "module" else node
        first = next((c for c in body.named_children if c.type not in _COMMENTS), None) if body else None
        if first is not None and first.type == "expression_statement" and first.named_child_count:
            first = first.named_children[0]
        if first is None or first.type != "string":
            return None
        return "".join(self.text(c) for c in first.named_children if c.type == "string_content") or None

    # -- JavaScript / TypeScript / TSX
    def js(self, nodes: list[Any], _: Any) -> None:
        for outer in nodes:
            n = outer
            if n.type == "export_statement":
                n = n.child_by_field_name("declaration") or n.child_by_field_name("value")
            if n is not None and n.type in ("ambient_declaration", "expression_statement") and n.named_child_count:
                n = n.named_children[0]
            t = n.type if n is not None else ""
            if t in ("class_declaration", "abstract_class_declaration", "class", "interface_declaration"):
                name = self.name(n)
                self.add(name, "interface" if t == "interface_declaration" else "class", outer)
                self.js_members(n.child_by_field_name("body"), name)
            elif t in ("function_declaration", "generator_function_declaration", "function_signature"):
                self.add(self.name(n), "function", outer)
            elif t in ("type_alias_declaration", "enum_declaration"):
                self.add(self.name(n), t.split("_")[0], outer)
            elif t in ("internal_module", "module"):
                self.add(self.name(n).strip("'\""), "namespace", outer)
                body = n.child_by_field_name("body")
                if body is not None:
                    self.js(body.named_children, None)
            elif t in ("lexical_declaration", "variable_declaration"):
                for d in n.named_children:
                    name, value = self.name(d), d.child_by_field_name("value")
                    vt = value.type if value is not None else ""
                    if d.type != "variable_declarator" or not name:
                        continue
                    if vt in ("arrow_function", "function_expression", "function", "generator_function"):
                        self.add(name, "function", outer)
                    elif vt in ("class", "class_expression"):
                        self.add(name, "class", outer)
                        self.js_members(value.child_by_field_name("body"), name)
                    elif re.fullmatch(_CONST, name):
                        self.add(name, "const", outer)

    def js_members(self, body: Any, cls: str) -> None:
        for m in body.named_children if body is not None else []:
            value = m.child_by_field_name("value")
            if m.type in ("method_definition", "method_signature", "abstract_method_signature") or (
                    m.type in ("field_definition", "public_field_definition") and value is not None
                    and value.type in ("arrow_function", "function_expression")):
                name = m.child_by_field_name("name") or m.child_by_field_name("property")
                self.add(_q(cls, self.text(name)), "method", m, cls)

    # -- Go
    def go(self, nodes: list[Any], _: Any) -> None:
        for n in nodes:
            t = n.type
            if t == "function_declaration":
                self.add(self.name(n), "func", n)
            elif t == "method_declaration":
                recv = n.child_by_field_name("receiver")
                param = recv.named_children[0] if recv is not None and recv.named_child_count else None
                rtype = self.text(param.child_by_field_name("type") if param is not None else None)
                rtype = rtype.lstrip("*").split("[")[0].strip()
                self.add(_q(rtype, self.name(n)), "func", n, rtype or None)
            elif t == "type_declaration":
                for spec in n.named_children:
                    name, ty = self.name(spec), spec.child_by_field_name("type")
                    kind = {"struct_type": "struct", "interface_type": "interface"}.get(ty.type if ty else "", "type")
                    self.add(name, kind, n if n.named_child_count == 1 else spec)
                    if kind == "interface":
                        for m in ty.named_children:
                            if m.type in ("method_elem", "method_spec"):
                                self.add(_q(name, self.name(m)), "method", m, name)
            elif t in ("const_declaration", "var_declaration"):
                for spec in n.named_children:
                    for ident in spec.children_by_field_name("name"):
                        name = self.text(ident)
                        if t == "const_declaration" or name[:1].isupper():  # vars: exported ones only
                            self.add(name, "const", n)

    # -- Rust
    def rust(self, nodes: list[Any], cont: str | None) -> None:
        kinds = {"function_item": "fn", "function_signature_item": "fn", "struct_item": "struct",
                 "enum_item": "enum", "union_item": "union", "type_item": "type", "trait_item": "trait",
                 "mod_item": "mod", "macro_definition": "macro", "const_item": "const", "static_item": "const"}
        for n in nodes:
            t = n.type
            if t == "impl_item" and cont is None:
                words = re.findall(r"[A-Za-z_]\w*", re.sub(r"<.*", "", self.text(n.child_by_field_name("type"))))
                body = n.child_by_field_name("body")
                if words and body is not None:
                    self.rust(body.named_children, words[-1])
            elif t in kinds:
                name = self.name(n)
                self.add(_q(cont, name), kinds[t], n, cont)
                body = n.child_by_field_name("body")
                if body is not None and t == "trait_item":
                    self.rust(body.named_children, name)
                elif body is not None and t == "mod_item" and name not in ("tests", "test"):
                    self.rust(body.named_children, None)

    # -- Java
    def java(self, nodes: list[Any], cont: str | None) -> None:
        kinds = {"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
                 "record_declaration": "record", "annotation_type_declaration": "@interface"}
        for n in nodes:
            t = n.type
            if t in kinds:
                name = _q(cont, self.name(n))
                self.add(name, kinds[t], n, cont)
                body = n.child_by_field_name("body")
                members = []
                for m in body.named_children if body is not None else []:
                    members.extend(m.named_children if m.type == "enum_body_declarations" else [m])
                self.java(members, name)
            elif cont and t in ("method_declaration", "constructor_declaration", "compact_constructor_declaration"):
                self.add(_q(cont, self.name(n)), "method", n, cont)
            elif cont and t in ("field_declaration", "constant_declaration"):
                for d in n.children_by_field_name("declarator"):
                    if re.fullmatch(_CONST, self.name(d)):
                        self.add(_q(cont, self.name(d)), "const", n, cont)

    # -- C / C++
    def c_name(self, d: Any, want_function: bool) -> str:
        """Follow a declarator chain down to its identifier ("" if not a function when one is wanted)."""
        is_fn = False
        while d is not None and d.type not in ("identifier", "field_identifier", "qualified_identifier",
                                               "destructor_name", "operator_name", "type_identifier"):
            is_fn = is_fn or d.type == "function_declarator"
            if d.type == "parenthesized_declarator" or (d.type == "init_declarator" and want_function):
                return ""
            d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_child_count else None)
        if d is None or (want_function and not is_fn):
            return ""
        return re.sub(r"<[^<>]*>", "", self.text(d)).replace("::", ".")

    def c(self, nodes: list[Any], cont: str | None) -> None:
        types = {"struct_specifier": "struct", "class_specifier": "class", "union_specifier": "union",
                 "enum_specifier": "enum"}
        for n in nodes:
            t = n.type
            if t in ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
                     "template_declaration", "declaration_list"):
                self.c(n.named_children, cont)
            elif t == "linkage_specification":
                self.c([n.child_by_field_name("body")] if n.child_by_field_name("body") else [], cont)
            elif t == "namespace_definition":
                name = self.name(n).replace("::", ".")
                self.add(name, "namespace", n)
                if n.child_by_field_name("body") is not None:
                    self.c(n.child_by_field_name("body").named_children, cont)
            elif t in types:
                self.c_type(n, types[t], cont, n)
            elif t == "function_definition":
                name = self.c_name(n.child_by_field_name("declarator"), True)
                self.add(_q(cont, name), "function", n, cont or (name.rpartition(".")[0] or None))
            elif t in ("declaration", "field_declaration", "type_definition"):
                ty = n.child_by_field_name("type")
                spec = ty if ty is not None and ty.type in types and ty.child_by_field_name("body") else None
                if spec is not None:
                    alias = self.c_name(n.child_by_field_name("declarator"), False) if t == "type_definition" else ""
                    self.c_type(spec, types[spec.type], cont, n, alias)
                for d in n.children_by_field_name("declarator"):
                    fn = self.c_name(d, True)
                    var = "" if fn or t != "declaration" or cont else self.c_name(d, False)
                    if fn:
                        self.add(_q(cont, fn), "function", n, cont or (fn.rpartition(".")[0] or None))
                    elif t == "type_definition" and cont is None and spec is None:
                        self.add(self.c_name(d, False), "typedef", n)
                    elif var and re.fullmatch(_CONST, var):
                        self.add(var, "const", n)
            elif cont is None and t == "preproc_function_def":
                self.add(self.name(n), "macro", n)
            elif cont is None and t == "preproc_def" and n.child_by_field_name("value") is not None:
                self.add(self.name(n), "const", n)
            elif t == "alias_declaration":
                self.add(_q(cont, self.name(n)), "using", n, cont)

    def c_type(self, spec: Any, kind: str, cont: str | None, outer: Any, alias: str = "") -> None:
        body = spec.child_by_field_name("body")
        name = self.text(spec.child_by_field_name("name")).replace("::", ".") or alias
        if body is None or not name:
            return
        name = _q(cont, name)
        self.add(name, kind, outer, cont)
        if alias and alias != name.rpartition(".")[2]:
            self.add(_q(cont, alias), "typedef", outer, cont)
        if kind != "enum":
            self.c(body.named_children, name)

    # -- Ruby
    def ruby(self, nodes: list[Any], cont: str | None) -> None:
        for n in nodes:
            t = n.type
            if t in ("class", "module"):
                name = self.name(n).replace("::", ".")
                self.add(name, t, n)  # classes and modules are namespaces: nested ones are not qualified
                body = n.child_by_field_name("body")
                self.ruby(body.named_children if body is not None else [], name)
            elif t in ("method", "singleton_method"):
                self.add(_q(cont, self.name(n)), "def", n, cont)
            elif t == "singleton_class" and n.child_by_field_name("body") is not None:
                self.ruby(n.child_by_field_name("body").named_children, cont)
            elif t == "assignment":
                left = n.child_by_field_name("left")
                if left is not None and left.type == "constant":
                    self.add(_q(cont, self.text(left)), "const", n, cont)

    # -- shell
    def bash(self, nodes: list[Any], _: Any) -> None:
        for n in nodes:
            if n.type == "function_definition":
                self.add(self.name(n), "function", n)
            for a in [n] if n.type == "variable_assignment" else (
                    n.named_children if n.type == "declaration_command" else []):
                name = self.name(a)
                if a.type == "variable_assignment" and re.fullmatch(_CONST, name):
                    self.add(name, "const", n)


def _python_ast(text: str) -> tuple[str, list[_Def]] | None:
    """Python symbols via the standard library, for when tree-sitter is unavailable or chokes."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.splitlines()
    defs: list[_Def] = []

    def comment_above(node: ast.stmt) -> str:
        i = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno]) - 2
        buf = []
        while i >= 0 and lines[i].lstrip().startswith("#"):
            buf.append(lines[i])
            i -= 1
        return _clean_comment("\n".join(reversed(buf)))

    def walk(body: list[ast.stmt], cls: str | None) -> None:
        for n in body:
            if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                name = _q(cls, n.name)
                doc = ast.get_docstring(n, clean=False)
                defs.append(_Def(name, "class" if isinstance(n, ast.ClassDef) else "def", cls,
                                 doc=doc if doc is not None else comment_above(n)))
                if isinstance(n, ast.ClassDef):
                    walk(n.body, name)
            elif cls is None and isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if len(targets) == 1 and isinstance(targets[0], ast.Name) and re.fullmatch(_CONST, targets[0].id):
                    defs.append(_Def(targets[0].id, "const", None, doc=""))
            elif cls is None and isinstance(n, (ast.If, ast.Try, ast.With)):
                walk(n.body + getattr(n, "orelse", []) + getattr(n, "finalbody", []), None)
                for h in getattr(n, "handlers", []):
                    walk(h.body, None)

    walk(tree.body, None)
    lead = ast.get_docstring(tree, clean=False)
    if lead is None:
        lead = _lead_from_lines(lines, "#", r"(async\s+def|def|class|@)\b")
    return lead, defs


def _lead_from_lines(lines: list[str], marker: str, def_start: str) -> str:
    run: list[str] = []
    for i, line in enumerate(lines[:300] + [""]):
        s = line.strip()
        if s.startswith(marker):
            run.append(s)
            continue
        text = _clean_comment("\n".join(run))
        if text and not re.search(_LICENSE, text) and not re.match(def_start, s):
            return text
        run = []
        if s:
            return ""
    return ""


# ---------------------------------------------------------------- summaries

def _compose(lead: str, defs: list[_Def], ex: _Extractor | None) -> str:
    parts = [_sentences(lead, 3, _LEAD_LIMIT)] if lead else []
    names = {d.name for d in defs}
    listed = [d for d in defs if d.kind != "const" and (d.container is None or d.container not in names)]
    entries, seen = [], set()
    for d in listed:
        if d.name in seen:
            continue
        seen.add(d.name)
        doc = d.doc
        if doc is None and ex is not None:
            doc = ex.py_docstring(d.inner) if ex.grammar == "python" else None
            doc = doc if doc is not None else ex.doc_before(d.node)
        entries.append((f"{d.kind} {d.name}", _sentences(doc or "", 1, _DOC_LIMIT, first_paragraph=True)))
    if entries:
        prefix = " ".join(parts + ["Defines: "])
        spare = SUMMARY_LIMIT - len(prefix) - len("; ".join(e for e, _ in entries))
        out = []
        for entry, doc in entries:  # describe definitions in order while the budget allows
            if doc and len(doc) + 3 <= spare:
                entry, spare = f"{entry} — {doc}", spare - len(doc) - 3
            out.append(entry)
        parts.append("Defines: " + "; ".join(out))
    elif defs:
        parts.append("Symbols: " + ", ".join(dict.fromkeys(d.name for d in defs)))
    return _cut(" ".join(parts), SUMMARY_LIMIT)


def _markdown(text: str) -> str:
    headings, intro, fence, lines = [], "", None, text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":  # front matter
        start = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), 0)
    para: list[str] = []
    for i in range(start, len(lines)):
        s = lines[i].strip()
        if fence or s.startswith(("```", "~~~")):
            fence = None if fence and s.startswith(fence) else (fence or s[:3])
            continue
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        atx = re.match(r"#{1,6}\s+(.+?)[\s#]*$", s)
        if atx or (s and re.fullmatch(r"(=+|-+|~+|\^+)", nxt) and len(nxt) >= 3 and not s.startswith(("-", "*"))):
            headings.append((atx.group(1) if atx else s).strip("*_` "))
        elif s and not intro and headings and not re.fullmatch(r"(=+|-+|~+|\^+)", s) and not s.startswith(
                ("<", "!", "[!", "|", ">")):
            para.append(s)
        elif para and not intro:
            intro = " ".join(para)
    intro = intro or " ".join(para)
    parts = [headings[0].rstrip(".") + "."] if headings else []
    if intro:
        parts.append(_sentences(re.sub(r"[*_`]|\[([^\]]*)\]\([^)]*\)", r"\1", intro), 2, _LEAD_LIMIT))
    if len(headings) > 1:
        parts.append("Sections: " + "; ".join(headings[1:]))
    return _cut(" ".join(parts), SUMMARY_LIMIT) if parts else _plain(text, None)


def _plain(text: str, language: str | None) -> str:
    parts = []
    if language == "json":
        try:
            import json

            data = json.loads(text) if len(text) < _MAX_PARSE_CHARS else None
            if isinstance(data, dict) and data:
                parts.append("Keys: " + ", ".join(map(str, list(data)[:60])))
        except ValueError:
            pass
    elif language in ("yaml", "toml", "ini", "dotenv", "make"):
        pat = {"yaml": r"([A-Za-z_][\w.-]*)\s*:(?!\S)", "make": r"([A-Za-z_][\w.-]*)\s*:(?!=)",
               "dotenv": r"(?:export\s+)?([A-Za-z_]\w*)\s*="}.get(language, r"\[+([^\]]+)\]+|([A-Za-z_][\w.-]*)\s*=")
        keys = [next(filter(None, m.groups())) for m in re.finditer("^" + pat, text[:_MAX_PARSE_CHARS], re.M)]
        if keys:
            parts.append(("Targets: " if language == "make" else "Keys: ") + ", ".join(dict.fromkeys(keys[:200])))
    lines = _meaningful_lines(text)
    if lines:
        parts.insert(0, " ".join(lines) if language in (None, "text") else "; ".join(lines))
    return _cut(" ".join(parts), SUMMARY_LIMIT)


def _is_binary(text: str) -> bool:
    head = text[:8192]
    controls = sum(1 for ch in head if ord(ch) < 32 and ch not in "\t\n\r\f\v\x1b")
    return "\x00" in head or controls > len(head) * 0.1


def _extract(language: str, text: str) -> tuple[str, list[_Def], _Extractor | None]:
    grammar = language
    if language == "c" and re.search(r"^\s*(class|namespace|template\s*<)\b", text, re.M):
        grammar = "cpp"  # a C++ header named .h
    ex = None
    try:
        ex = _Extractor(grammar, text[:_MAX_PARSE_CHARS].encode("utf-8", "replace"))
        defs = ex.run()
    except Exception:
        if language != "python":
            raise
        defs = []
    if language == "python" and (ex is None or ex.root.has_error):
        fallback = _python_ast(text)
        if fallback is not None:
            return fallback[0], fallback[1], None
    if ex is None:
        return "", [], None
    lead = ex.py_docstring(ex.root) if grammar == "python" else None
    return lead or ex.lead(defs[0].node if defs else None), defs, ex


def summarize_local(path: str, text: str) -> LocalSummary:
    """Summarise one file with no network and no model; never raises."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
        language = detect_language(path, text[:256])
        if not text.strip():
            return LocalSummary(language, "Empty file.", [])
        if _is_binary(text):
            return LocalSummary(language, "Binary or non-text content.", [])
        if language in ("markdown", "rst"):
            return LocalSummary(language, _markdown(text), [])
        if language not in _GRAMMARS:
            return LocalSummary(language, _plain(text, language), [])
        try:
            lead, defs, ex = _extract(language, text)
        except Exception:
            lead, defs, ex = "", [], None
        symbols = list(dict.fromkeys(d.name for d in defs))[:MAX_SYMBOLS]
        summary = _compose(lead, defs, ex) if (lead or defs) else ""
        if not defs:
            body = _plain(re.sub(r"(?s)/\*.*?\*/", "", text[:20000]), language)
            summary = _cut(f"{summary} {body}".strip(), SUMMARY_LIMIT) if body not in summary else summary
        return LocalSummary(language, summary, symbols)
    except Exception:
        return LocalSummary(None, "", [])
