"""The pure parts of the collaborator's MCP client: the call line, the config tables, the
image parts of a chat message on each provider's wire (no server, no network)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from loom.agent.outside.calls import ArgumentError, ToolCall, canonical, parse_arguments, tool_word
from loom.agent.outside.config import parse_servers
from loom.agent.outside.schema import ToolSpec, check, coerce, signature
from loom.errors import LoomError
from loom.llm.base import ChatMessage, ImagePart
from loom.llm.media import anthropic_message, openai_message
from loom.redact import forget_secrets


def test_the_call_line() -> None:
    assert tool_word('→ files.read_file path:"a b.md"') == ("files", "read_file",
                                                           'path:"a b.md"')
    assert tool_word("-> web.search") == ("web", "search", "")
    assert tool_word("→ view a7x2") is None and tool_word("files.read x:1") is None
    args, bare = parse_arguments('a:1 b:"x y" c:true d:[1, 2] e:word f=2.5 g:{"k": null}')
    assert args == {"a": 1, "b": "x y", "c": True, "d": [1, 2], "e": "word", "f": 2.5,
                    "g": {"k": None}}
    assert bare == {"a": "1", "c": "true", "e": "word", "f": "2.5"}
    assert parse_arguments('{"a": 1}') == ({"a": 1}, {})
    assert parse_arguments('t:"two\nlines"')[0] == {"t": "two\nlines"}


@pytest.mark.parametrize(("text", "says"), [
    ("a", "expected key:value, found 'a'"),
    ("a:", "a: has no value"),
    ('a:"open', "a: the quoted text does not parse"),
    ('{"a": 1', "the JSON object does not parse"),
    ('{"a": 1} b:2', "either one JSON object or key:value pairs"),
    ("a:1 a:2", "a: given twice"),
])
def test_arguments_that_do_not_read(text: str, says: str) -> None:
    with pytest.raises(ArgumentError, match=says.replace("(", r"\(")):
        parse_arguments(text)


def test_canonical_text() -> None:
    assert canonical(ToolCall("fs", "read", {"path": "a b", "n": 2})) == \
        '→ fs.read path:"a b" n:2'
    assert canonical(ToolCall("fs", "put", {"obj": {"k": 1}})) == '→ fs.put {"obj": {"k": 1}}'
    assert canonical(ToolCall("fs", "list")) == "→ fs.list"


def test_the_schema_checks_and_coerces() -> None:
    spec = ToolSpec("fs", "read", "Read.", {
        "type": "object", "required": ["path"],
        "properties": {"path": {"type": "string"}, "lines": {"type": "integer", "default": 40},
                       "mode": {"enum": ["text", "raw"]}}})
    assert signature(spec) == 'path:string lines:integer=40? mode:"text"|"raw"?'
    assert check(spec, {"path": "a"}) is None
    assert check(spec, {}) == "fs.read needs path"
    assert check(spec, {"path": "a", "line": 3}) == \
        "fs.read takes no argument 'line' (did you mean lines?)"
    assert check(spec, {"path": "a", "mode": "bin"}).startswith("fs.read: mode: 'bin' is not")
    # a bare word stays text where the schema wants text
    assert coerce(spec, {"path": 42}, {"path": "0042"}) == {"path": "0042"}


def test_config_tables_and_their_errors() -> None:
    servers = parse_servers({"mcp": {"servers": {
        "fs": {"command": "npx -y server-fs /notes", "env": {"KEY": "env-secret-91c"}},
        "web": {"url": "https://example.com/mcp", "headers": {"X-Key": "hdr-secret-2d4"},
                "approval": "never", "timeout_s": 5}}}})
    assert servers["fs"].command == ["npx", "-y", "server-fs", "/notes"]
    assert servers["web"].approval == "never" and servers["web"].transport == "http"
    for bad, says in [
        ({"command": ["x"], "url": "http://h/mcp"}, "either command"),
        ({}, "either command"),
        ({"url": "ftp://h"}, "url: an http:// or https:// address"),
        ({"command": ["x"], "headers": {"A": "b"}}, "headers are for a server reached by url"),
        ({"command": ["x"], "approval": "sometimes"}, "approval"),
        ({"command": ["x"], "colour": "red"}, "colour"),
    ]:
        with pytest.raises(LoomError) as err:
            parse_servers({"mcp": {"servers": {"s": bad}}})
        assert err.value.code == "INVALID_SYNTAX" and says in err.value.message
        assert err.value.hint == "fix [mcp.servers.s] in config.toml"
    with pytest.raises(LoomError, match="name"):
        parse_servers({"mcp": {"servers": {"a.b": {"command": ["x"]}}}})
    # a secret is never in an error, even one about its own field
    with pytest.raises(LoomError) as err:
        parse_servers({"mcp": {"servers": {"s": {"url": "http://h", "headers": {
            "A": "hdr-secret-77e"}, "cwd": "/"}}}})
    assert "hdr-secret-77e" not in err.value.message
    forget_secrets()


def test_images_on_each_providers_wire(tmp_path: Path) -> None:
    png = tmp_path / "p.png"
    png.write_bytes(b"\x89PNG-bytes")
    data = base64.b64encode(b"\x89PNG-bytes").decode()
    msg = ChatMessage(role="user", content="results",
                      images=[ImagePart(source=str(png), media_type="image/png", size=10)])
    assert openai_message(msg) == {"role": "user", "content": [
        {"type": "text", "text": "results"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]}
    assert anthropic_message(msg) == {"role": "user", "content": [
        {"type": "text", "text": "results"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": data}}]}
    plain = ChatMessage(role="user", content="hi")
    assert openai_message(plain) == anthropic_message(plain) == {"role": "user",
                                                                 "content": "hi"}
    png.unlink()  # gone by send time: said, not a crash
    assert openai_message(msg)["content"][1]["text"].startswith("[an image (image/png)")
