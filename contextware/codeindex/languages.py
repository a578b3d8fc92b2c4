"""Which language a file is written in: by extension, by whole base name, else by its shebang."""

from __future__ import annotations

import os
import re

_EXTENSIONS = {
    "python": "py pyi pyw",
    "javascript": "js mjs cjs jsx",
    "typescript": "ts mts cts",
    "tsx": "tsx",
    "go": "go",
    "rust": "rs",
    "java": "java",
    "c": "c h",
    "cpp": "cc cpp cxx c++ hpp hh hxx h++ ipp inl",
    "ruby": "rb rake gemspec ru",
    "bash": "sh bash zsh ksh",
    "markdown": "md markdown mdx",
    "rst": "rst",
    "text": "txt",
    "json": "json jsonc json5 ipynb",
    "yaml": "yaml yml",
    "toml": "toml",
    "ini": "ini cfg conf",
    "dotenv": "env",
    "xml": "xml",
    "html": "html htm",
    "css": "css",
    "scss": "scss",
    "less": "less",
    "sql": "sql",
    "kotlin": "kt kts",
    "swift": "swift",
    "csharp": "cs",
    "php": "php",
    "scala": "scala",
    "lua": "lua",
    "perl": "pl pm",
    "r": "r",
    "dart": "dart",
    "elixir": "ex exs",
    "erlang": "erl",
    "haskell": "hs",
    "clojure": "clj",
    "vue": "vue",
    "svelte": "svelte",
    "hcl": "tf hcl",
    "proto": "proto",
    "graphql": "graphql gql",
    "dockerfile": "dockerfile",
    "make": "mk",
    "cmake": "cmake",
    "groovy": "gradle groovy",
    "powershell": "ps1",
    "batch": "bat cmd",
    "csv": "csv",
    "zig": "zig",
    "ocaml": "ml",
    "julia": "jl",
}
LANGUAGES: dict[str, str] = {f".{ext}": lang for lang, exts in _EXTENSIONS.items() for ext in exts.split()}
_NAMES = {
    "make": "Makefile makefile GNUmakefile",
    "dockerfile": "Dockerfile Containerfile",
    "groovy": "Jenkinsfile",
    "ruby": "Rakefile Gemfile Vagrantfile Podfile Brewfile",
    "cmake": "CMakeLists.txt",
    "starlark": "BUILD BUILD.bazel WORKSPACE",
    "bash": ".bashrc .bash_profile .zshrc .profile",
}
LANGUAGES.update({name: lang for lang, names in _NAMES.items() for name in names.split()})  # whole base names
GRAMMARS = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "ruby", "bash"}
_SHEBANGS = {
    "python": "python",
    "pypy": "python",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "ksh": "bash",
    "node": "javascript",
    "nodejs": "javascript",
    "bun": "javascript",
    "deno": "typescript",
    "ruby": "ruby",
}


def detect_language(path: str, first_line: str | None = None) -> str | None:
    """Language from the file name, else from a shebang (read from the file when not given)."""
    name = os.path.basename(path)
    language = LANGUAGES.get(name) or LANGUAGES.get(os.path.splitext(name)[1].lower())
    if language or name.startswith(("Dockerfile.", "Containerfile.")):
        return language or "dockerfile"
    if first_line is None:
        try:
            with open(path, "rb") as f:
                first_line = f.read(256).decode("utf-8", "replace")
        except OSError:
            return None
    m = re.match(r"#!\s*(\S+)(.*)", first_line.split("\n", 1)[0])
    prog = os.path.basename(m.group(1)) if m else ""
    if m and prog == "env":  # "#!/usr/bin/env -S node --flag": the first word that is not an option
        prog = next((w for w in m.group(2).split() if not w.startswith("-") and "=" not in w), "")
    return _SHEBANGS.get(re.sub(r"[\d.]+$", "", os.path.basename(prog)))
