"""The command lines our texts print, extracted mechanically for tests/e2e/test_documented_commands.py:
fenced shell blocks and `$ ` lines of README.md and docs/*.md, their inline `pt2onnx ...` code spans,
the usage lines and `pt2onnx ...` spans of `pt2onnx --help` and every `pt2onnx SUB --help`; and how
a table entry turns a line with placeholders into the line that is run (textual substitutions that
must each apply, so the run line stays the printed one)."""
import dataclasses
import pathlib
import re
import subprocess
from typing import List, Optional, Sequence, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHELL_BLOCKS = {"bash", "sh", "shell", "console"}
# Unlabelled blocks hold output as well as commands: a line is a command when it starts with `$ `,
# or (in a block without `$ ` lines) when its first word is one of these.
COMMAND_WORDS = ("pt2onnx ", "bash ", "scripts/", "python ", ".venv/bin/python ")
# `pt2onnx SUB` alone in prose names a command ("`pt2onnx verify` binds arguments ..."); it is a
# command line only for a subcommand that runs without arguments.
RUNS_WITHOUT_ARGUMENTS = {"pt2onnx ops"}
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
INLINE_SPAN = re.compile(r"`(pt2onnx [^`]+)`")
HELP_SPAN = re.compile(r"`(pt2onnx [^`]+)`")


@dataclasses.dataclass
class DocumentedLine:
    text: str   # as printed: `$ ` dropped, continuation lines kept (`\` + newline)
    where: List[str]                      # "docs/cli.md:55", "pt2onnx convert --help"
    shown: List[str] = dataclasses.field(default_factory=list)  # what the text shows after it

    @property
    def key(self):
        """The line the table knows it by: continuations joined, a trailing shell comment dropped."""
        return strip_comment(" ".join(part.strip() for part in self.text.split("\\\n")))


def strip_comment(line):
    # A `#` that starts a word outside quotes begins a comment (none of our lines quote a `#`).
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def doc_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def _block_commands(lines, first_line, lang, where_prefix):
    """(line number, command text, shown lines) of one fenced block's body."""
    found = []
    has_prompt = any(l.strip().startswith("$ ") for l in lines)
    i = 0
    while i < len(lines):
        raw = lines[i].rstrip("\n")
        stripped = raw.strip()
        number = first_line + i
        is_command = False
        text = stripped
        if lang in SHELL_BLOCKS:
            is_command = bool(stripped) and not stripped.startswith("#")
            text = stripped[2:] if stripped.startswith("$ ") else stripped
        elif lang == "":
            if stripped.startswith("$ "):
                is_command, text = True, stripped[2:]
            elif stripped.startswith("pt2onnx "):  # also a line a shown output prints
                is_command = True
            elif not has_prompt and stripped.startswith(COMMAND_WORDS):
                is_command = True
        i += 1
        if not is_command:
            if found and (lang == "" and has_prompt or stripped.startswith("#")):
                found[-1][2].append(stripped)
            continue
        while text.endswith("\\") and i < len(lines):  # continuation lines
            text += "\n" + lines[i].rstrip("\n")
            i += 1
        found.append((number, text, []))
        if lang == "" and has_prompt and not stripped.startswith("$ ") and len(found) > 1:
            # A printed command inside the previous command's output: that output shows it too.
            found[-2][2].append(stripped)
    return [(f"{where_prefix}:{n}", t, shown) for n, t, shown in found]


def doc_lines() -> List[DocumentedLine]:
    """Every command line README.md and docs/*.md print, in file order, each key once."""
    found = []
    for path in doc_files():
        rel = path.relative_to(ROOT).as_posix()
        lines = path.read_text().splitlines(keepends=True)
        prose = []  # lines outside fences, blanked inside, so spans keep their line numbers
        k = 0
        while k < len(lines):
            m = FENCE.match(lines[k])
            if not m:
                prose.append(lines[k])
                k += 1
                continue
            end = k + 1
            while end < len(lines) and not FENCE.match(lines[end]):
                end += 1
            lang = m.group(2).lower()
            if lang in SHELL_BLOCKS or lang == "":
                found += _block_commands(lines[k + 1:end], k + 2, lang, rel)
            prose += ["\n"] * (end + 1 - k)
            k = end + 1
        text = "".join(prose)
        for m in INLINE_SPAN.finditer(text):
            span = " ".join(m.group(1).split())
            if re.fullmatch(r"pt2onnx \w+", span) and span not in RUNS_WITHOUT_ARGUMENTS:
                continue
            found.append((f"{rel}:{text.count(chr(10), 0, m.start()) + 1}", span, []))
    return _merge(found)


def _merge(found):
    by_key = {}
    for where, text, shown in found:
        line = DocumentedLine(text, [where], shown)
        if line.key in by_key:
            by_key[line.key].where.append(where)
            by_key[line.key].shown += shown
        else:
            by_key[line.key] = line
    return list(by_key.values())


def help_text(cli, *subcommand):
    proc = subprocess.run([cli, *subcommand, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def subcommands(cli):
    """The subcommands `pt2onnx --help` lists."""
    text = help_text(cli)
    listed = text.split("Subcommands:", 1)[1]
    return [line.split()[0] for line in listed.splitlines() if line.strip() and line.startswith("  ")]


def help_lines(cli) -> List[DocumentedLine]:
    """The usage lines and `pt2onnx ...` spans of `pt2onnx --help` and each `pt2onnx SUB --help`."""
    found = []
    for sub in [()] + [(s,) for s in subcommands(cli)]:
        where = " ".join(("pt2onnx",) + sub + ("--help",))
        text = help_text(cli, *sub)
        for line in text.splitlines():
            if line.startswith("Usage: "):
                found.append((where, line[len("Usage: "):].strip(), []))
        for m in HELP_SPAN.finditer(text):
            found.append((where, " ".join(m.group(1).split()), []))
    return _merge(found)


@dataclasses.dataclass(frozen=True)
class Unrun:
    """A documented line the test does not run, and why (the test still checks its shell syntax)."""
    reason: str


@dataclasses.dataclass
class Run:
    """One run of a documented line: its placeholders replaced (each (old, new) must occur in the line,
    and is applied in order), in a directory holding `files` (name there -> fixture name), with `env`;
    the expected exit status and a check of what the text claims: check(result, workdir)."""
    status: int
    check: Optional[object] = None
    files: dict = dataclasses.field(default_factory=dict)
    subs: Sequence[Tuple[str, str]] = ()
    env: dict = dataclasses.field(default_factory=dict)
    loose: Sequence[str] = ()     # shown output lines only checked up to these prefixes (vary with torch)
    xfail: Optional[str] = None   # a finding another engineer fixes: strict xfail until merged
    timeout: int = 300

    def instantiate(self, text):
        for old, new in self.subs:
            assert old in text, f"placeholder {old!r} is not in the documented line {text!r}"
            text = text.replace(old, new, 1)
        return text


def shown_pattern(shown_line):
    """A regex for one shown output line: `...` stands for anything (elided output)."""
    parts = shown_line.split("...")
    return re.compile(".*".join(re.escape(p) for p in parts))


def lines_matching_shown(shown: Sequence[str], output: str, loose_prefixes: Sequence[str] = ()):
    """The shown lines that no line of `output` matches. A shown line starting with one of
    `loose_prefixes` (numbers that vary with torch) only needs an output line with that prefix."""
    out_lines = [l.strip() for l in output.splitlines()]
    missing = []
    for s in shown:
        loose = next((p for p in loose_prefixes if s.startswith(p)), None)
        if loose:
            ok = any(l.startswith(loose) for l in out_lines)
        else:
            pattern = shown_pattern(s.strip())
            ok = any(pattern.fullmatch(l) for l in out_lines)
        if not ok:
            missing.append(s)
    return missing
