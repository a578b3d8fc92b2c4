"""``doctor`` runs the loop: every installed host's real hook commands, fed sample events (a session
start, a prompt, a turn end) against the project's real memory, and what the model would receive.

The turn end runs in-process (``CONTEXTWARE_SERVICE=off``, so it is saved before the hook exits)
under a throwaway session id whose rows (its turns and any digest) are removed afterwards: memory is
left as it was.  Hooks fail open (a failed briefing prints nothing and the turn goes on), so a failure
shows only in ``hooks.log``: lines it gains during the run fail the check.  Two installs of one host
(project and user scope) inject everything twice: flagged as a ``duplicate`` problem.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.core.json_types import JsonObject

SAMPLE_PROMPT = "Contextware doctor: what does this project's memory hold?"
SAMPLE_ANSWER = "Contextware doctor: a sample answer, removed after the check."
RUN_TIMEOUT_S = 90.0
RECENT_S = 24 * 3600.0

# host -> (prompt event, turn-end event)
EVENTS = {"gemini": ("BeforeAgent", "AfterAgent"), "claude": ("UserPromptSubmit", "Stop")}


def host_and_scope(source: str, root: Path) -> tuple[str, str] | None:
    """(host, scope) of a file holding our hooks, None for this install's own (no file)."""
    path = Path(source)
    if not path.is_absolute():
        return None
    from contextware.hosts.install.claude_code import config_dir

    scope = "project" if path.is_relative_to(root) else "user"
    claude = ".claude" in path.parts or path.is_relative_to(config_dir())
    return ("claude" if claude else "gemini"), scope


class _Check(TypedDict):
    name: str  # command, install, hook, loop, duplicate, hooks_log, mcp, service, data, briefing
    ok: bool
    detail: str  # what was found, in a sentence
    fix: str | None  # what to run when not ok


class DoctorCheck(_Check, total=False):
    """One line of ``doctor``'s report: a check, its verdict and the fix; some name the installed
    command they ran, the service's pid, or what the loop's briefing gave the model."""

    command: str
    pid: int | None
    briefing_chars: int
    briefing_first_line: str


def check(name: str, ok: bool, detail: str, fix: str | None = None, **extra: object) -> DoctorCheck:
    """A ``DoctorCheck`` (``extra``: its optional keys); the fix only when it is not ok."""
    return cast(DoctorCheck, {"name": name, "ok": ok, "detail": detail, "fix": None if ok else fix, **extra})


def duplicates(sources: list[str], root: Path) -> list[DoctorCheck]:
    """A ``duplicate`` problem per host installed in both scopes (``sources``: the files holding our hooks)."""
    scopes: dict[str, dict[str, str]] = {}
    for source in sources:
        found = host_and_scope(source, root)
        if found:
            scopes.setdefault(found[0], {})[found[1]] = source
    return [
        check(
            "duplicate",
            False,
            f"{host} has Contextware installed twice ({by['project']} and {by['user']}): the hooks answer once "
            "per event, but two installs are two sets of commands to keep working.",
            f"`contextware uninstall {host} --user` (or --project) to keep one",
        )
        for host, by in sorted(scopes.items())
        if len(by) > 1
    ]


def log_files(root: Path) -> list[Path]:
    from contextware.core.system import contextware_home
    from contextware.storage.layout import resolve_data_dir

    return [resolve_data_dir(root) / "hooks.log", contextware_home() / "hooks.log"]


def _log_sizes(files: list[Path]) -> dict[Path, int]:
    return {f: f.stat().st_size if f.is_file() else 0 for f in files}


def _new_lines(sizes: dict[Path, int]) -> list[str]:
    lines: list[str] = []
    for f, size in sizes.items():
        try:
            with open(f, "rb") as fh:
                fh.seek(size)
                lines += [ln for ln in fh.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            continue
    return lines


def recent_failures(files: list[Path], now: float | None = None) -> list[str]:
    """``hooks.log`` lines of the last day (each starts with its UTC time)."""
    now = time.time() if now is None else now
    out: list[str] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines()[-500:]:
            try:
                when = time.mktime(time.strptime(line[:20], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
            except ValueError:
                continue
            if now - when <= RECENT_S:
                out.append(line)
    return out


def _run(argv: list[str], event: JsonObject, root: Path, env: dict[str, str]) -> tuple[int, str, str]:
    try:
        run = subprocess.run(
            argv, input=json.dumps(event), capture_output=True, text=True, cwd=root, env=env, timeout=RUN_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, "", str(exc)
    return run.returncode, run.stdout.strip(), run.stderr.strip()


def _context(out: str) -> str | None:
    """The text the host hands the model from a hook's stdout, None when it is not what a host reads."""
    if not out:
        return ""
    try:
        body = json.loads(out)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    return str((body.get("hookSpecificOutput") or {}).get("additionalContext") or "")


def _events(host: str, session: str, root: Path, transcript: Path) -> list[JsonObject]:
    prompt_event, end_event = EVENTS[host]
    base: JsonObject = {"session_id": session, "cwd": str(root), "transcript_path": str(transcript)}
    end: JsonObject = {**base, "hook_event_name": end_event}
    if host == "gemini":
        end.update(prompt=SAMPLE_PROMPT, prompt_response=SAMPLE_ANSWER)
    else:
        end.update(last_assistant_message=SAMPLE_ANSWER, stop_hook_active=False)
    return [
        {**base, "hook_event_name": "SessionStart", "source": "startup"},
        {**base, "hook_event_name": prompt_event, "prompt": SAMPLE_PROMPT},
        end,
    ]


def forget_session(root: Path, session: str) -> int:
    """Remove what the sample turn end wrote: its turns and its digest episode."""
    from contextware.core.text import sql_str
    from contextware.storage.layout import resolve_data_dir
    from contextware.storage.project import Project

    if not resolve_data_dir(root).is_dir():
        return 0
    project = Project.open(str(root))
    removed = 0
    for table, where in (
        ("logs", f"session_id = {sql_str(session)}"),
        ("episodes", f"source = {sql_str('digest:' + session)}"),
    ):
        if table not in project.db.table_names():
            continue

        def drop(tbl: "Table", where: str = where) -> int:
            count = int(tbl.count_rows(where))
            if count:
                tbl.delete(where)
            return count

        removed += project.db.write(table, drop, maintain=False)
    return removed


def run_loop(command: str, source: str, root: Path) -> DoctorCheck:
    """Feed one installed hook command a session start, a prompt and a turn end, as its host would."""
    host, scope = host_and_scope(source, root) or ("gemini", "this install")
    argv = shlex.split(command)
    session = f"contextware-doctor-{os.urandom(4).hex()}"
    env = {**os.environ, "CONTEXTWARE_PROJECT_ROOT": str(root), "CONTEXTWARE_SERVICE": "off"}
    if host == "gemini":  # what Gemini CLI sets for every hook it runs (``Settings.gemini_hook``)
        env.update(GEMINI_SESSION_ID=session, GEMINI_PROJECT_DIR=str(root), GEMINI_CWD=str(root))
    logs = log_files(root)
    before = _log_sizes(logs)
    seen: dict[str, str] = {}  # event -> the context the hook gave
    problem = None
    with tempfile.TemporaryDirectory(prefix="contextware-doctor-") as tmp:
        transcript = Path(tmp) / f"{session}.jsonl"
        transcript.write_text(
            json.dumps({"type": "user", "message": {"role": "user", "content": SAMPLE_PROMPT}}) + "\n"
        )
        try:
            for event in _events(host, session, root, transcript):
                name = str(event["hook_event_name"])
                code, out, err = _run(argv, event, root, env)
                context = _context(out)
                if code != 0 or context is None:
                    said = (err or out or "no output").splitlines()[-1][:300]
                    problem = f"{name} exited {code}: {said}"
                    break
                seen[name] = context
        finally:
            removed = forget_session(root, session)
    failed = _new_lines(before)
    if problem is None and failed:
        problem = f"the hook failed open (hooks.log: {failed[-1][:300]})"
    where = f"{host} ({scope}, {source})"
    if problem:
        return check("loop", False, f"{command} for {where}: {problem}", f"see {logs[0]}", command=command)
    briefing, carrier = seen.get("SessionStart", ""), "the session start"
    if not briefing and host == "gemini":  # Gemini CLI's briefing rides on the session's first prompt
        briefing, carrier = seen.get(EVENTS[host][0], ""), "the first prompt's briefing"
    first = next((ln.strip() for ln in briefing.splitlines() if ln.strip()), "")
    prompt_chars = len(seen.get(EVENTS[host][0], ""))
    detail = (
        f"{command} for {where}: {carrier} gives the model {len(briefing)} characters"
        + (f" (first line: {first[:120]!r})" if first else "")
        + f", a prompt {prompt_chars}; the sample turn was saved and its {removed} rows removed."
    )
    return check("loop", True, detail, command=command, briefing_chars=len(briefing), briefing_first_line=first[:300])


def check_log(root: Path, loop_ok: bool) -> DoctorCheck:
    """Recent ``hooks.log`` failures: a problem unless the loop, run just now, shows they are over."""
    files = log_files(root)
    recent = recent_failures(files)
    if not recent:
        return check("hooks_log", True, "No hook failure in the last day.")
    detail = f"{len(recent)} hook failure(s) in the last day, the last: {recent[-1][:300]}"
    if loop_ok:
        return check("hooks_log", True, detail + " (the hooks work now).")
    return check("hooks_log", False, detail, f"see {' and '.join(str(f) for f in files if f.is_file())}")


__all__ = ["DoctorCheck", "check", "check_log", "duplicates", "forget_session", "run_loop"]
