"""A man page as plain text, for ``kafkalog man`` where neither man(1) nor nroff is installed.

Handles the small roff subset ``tools/make_man.py`` writes (.TH .SH .SS .PP .TP .B .BR .nf/.fi .RS/.RE,
\\fB \\fI \\fR font changes and the usual escapes); anything else is dropped, never shown as markup.
"""
from __future__ import annotations

import re
import textwrap

_ESCAPES = (("\\-", "-"), ("\\&", ""), ("\\(em", "--"), ("\\(en", "-"), ("\\e", "\\"), ("\\ ", " "),
            ("\\(aq", "'"), ("\\(dq", '"'), ("\\~", " "))
_FONT = re.compile(r"\\f(?:\[\w*\]|\(\w\w|[BIRP1-4])")


def _inline(text: str) -> str:
    text = _FONT.sub("", text)
    for roff, plain in _ESCAPES:
        text = text.replace(roff, plain)
    return text


def _macro_args(rest: str) -> list[str]:
    return [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', rest)]


def roff_to_text(page: str, width: int = 80) -> str:
    out: list[str] = []
    para: list[str] = []
    indent, literal, tag = 7, False, None

    def flush() -> None:
        nonlocal para, tag
        text = " ".join(para).strip()
        para = []
        if tag is not None:
            out.append(" " * indent + tag)
            tag = None
            if text:
                out.extend(textwrap.wrap(text, width, initial_indent=" " * (indent + 7),
                                         subsequent_indent=" " * (indent + 7)))
            return
        if text:
            out.extend(textwrap.wrap(text, width, initial_indent=" " * indent, subsequent_indent=" " * indent))
            out.append("")

    want_tag = False
    for line in page.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith("."):
            name, _, rest = line[1:].partition(" ")
            if name == "TH":
                args = _macro_args(rest)
                out += [_inline(f"{args[0]}({args[1]})" if len(args) > 1 else args[0]), ""]
            elif name in ("SH", "SS"):
                flush()
                out.append((" " * 3 if name == "SS" else "") + _inline(" ".join(_macro_args(rest))))
            elif name in ("PP", "P", "LP"):
                flush()
            elif name == "TP":
                flush()
                want_tag = True
            elif name in ("B", "I", "BR", "IR", "RB", "BI"):
                words = _inline("".join(_macro_args(rest)) if name != "B" else " ".join(_macro_args(rest)))
                if want_tag:
                    tag, want_tag = words, False
                else:
                    para.append(words)
            elif name == "nf":
                flush()
                literal = True
            elif name == "fi":
                literal = False
                out.append("")
            elif name == "RS":
                flush()
                indent += 4
            elif name == "RE":
                flush()
                indent = max(7, indent - 4)
            continue
        text = _inline(line)
        if literal:
            out.append(" " * indent + text)
        elif want_tag:
            tag, want_tag = text, False
        else:
            para.append(text)
    flush()
    return "\n".join(out).rstrip() + "\n"


def strip_overstrike(text: str) -> str:
    """nroff's bold/underline as backspace overstrikes (x\\bx, _\\bx) -> plain characters."""
    return re.sub(r".\x08", "", text)
