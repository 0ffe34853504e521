"""The first `<tag>` of a model's answer read the way BeautifulSoup's `html.parser` tree reads it, which is how
PrefEval's scripts read a choice and a check's answer (`soup.find(tag)`, then `.string` or `.text`): the same
stdlib parser, void elements closed at once, an end tag closing up to the most recent open tag of its name (one
with none open is ignored), unclosed tags closed at the end. No BeautifulSoup dependency for one lookup."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

#: bs4's `HTMLTreeBuilder.empty_element_tags`
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "menuitem", "meta",
                  "param", "source", "track", "wbr", "basefont", "bgsound", "command", "frame", "image", "isindex",
                  "nextid", "spacer"})


@dataclass
class Comment:
    text: str


@dataclass
class Element:
    name: str
    children: list[Element | Comment | str] = field(default_factory=list)

    def string(self) -> str | None:
        """bs4's `Tag.string`: the one child's text (a lone child element's `.string`), else None."""
        if len(self.children) != 1:
            return None
        child = self.children[0]
        if isinstance(child, Element):
            return child.string()
        return child.text if isinstance(child, Comment) else child

    def text(self) -> str:
        """bs4's `.text`: every text below, in order (comments left out)."""
        return "".join(c.text() if isinstance(c, Element) else c for c in self.children if not isinstance(c, Comment))

    def find(self, name: str) -> Element | None:
        """The first element called `name` below this one, in document order."""
        for child in self.children:
            if isinstance(child, Element):
                if child.name == name:
                    return child
                found = child.find(name)
                if found is not None:
                    return found
        return None


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("[document]")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag)
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].name == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        children = self.stack[-1].children
        if children and isinstance(children[-1], str):
            children[-1] += data
        else:
            children.append(data)

    def handle_comment(self, data: str) -> None:
        self.stack[-1].children.append(Comment(data))


def parse(text: str) -> Element:
    """The document tree of `text`."""
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root


def first_tag(text: str, name: str) -> Element | None:
    """`BeautifulSoup(text, "html.parser").find(name)`."""
    return parse(text).find(name)


def tag_text(text: str, name: str) -> str:
    """The stripped `.text` of the first `<name>` tag, `""` when there is none (PrefEval's
    `parse_explanation_and_answer`)."""
    element = first_tag(text, name)
    return element.text().strip() if element is not None else ""
