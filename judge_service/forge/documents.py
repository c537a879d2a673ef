"""Documents in, deterministic chunks out.

A chunk is a run of whole paragraphs (split on blank lines) up to ``max_chars``; a paragraph
longer than that is cut at sentence ends, and a sentence longer than that at ``max_chars``.
The same text and limit always give the same chunks, with character spans into the original.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from judge_service.traces.inputs import ForgeInputError, jsonl_records, text_field

DEFAULT_CHUNK_CHARS = 1500
DOCUMENT_SUFFIXES = (".md", ".txt")
_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", re.DOTALL)
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s)|\Z)", re.DOTALL)


@dataclass(frozen=True)
class Document:
    id: str
    text: str


@dataclass(frozen=True)
class Chunk:
    document_id: str
    index: int
    start: int
    end: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.document_id}#{self.index}"


def parse_documents(data: bytes | str) -> list[Document]:
    """Documents from JSONL ``{"id", "text"}``; an empty text or a repeated id names its line."""
    documents: list[Document] = []
    seen: dict[str, int] = {}
    for line, record in jsonl_records(data):
        doc_id = text_field(record, "id", line)
        if doc_id in seen:
            raise ForgeInputError(
                f"document id {doc_id!r} repeats line {seen[doc_id]}", line=line, field="id"
            )
        seen[doc_id] = line
        documents.append(Document(doc_id, text_field(record, "text", line)))
    if not documents:
        raise ForgeInputError("the upload has no documents", field="body")
    return documents


def read_folder(path: Path) -> list[Document]:
    """The .md and .txt files under ``path`` (sorted), each a document named by its path."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in DOCUMENT_SUFFIXES)
    if not files:
        raise ForgeInputError(f"no .md or .txt files in {path}", field="path")
    documents = []
    for file in files:
        text = file.read_text(encoding="utf-8", errors="replace")
        name = file.relative_to(path).as_posix()
        if not text.strip():
            raise ForgeInputError(f"document {name} is empty", field=name)
        documents.append(Document(name, text))
    return documents


def _pieces(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Spans of at most ``max_chars`` covering ``text[start:end]``, cut at sentence ends."""
    if end - start <= max_chars:
        return [(start, end)]
    spans: list[tuple[int, int]] = []
    for match in _SENTENCE.finditer(text, start, end):
        s, e = match.start(), match.end()
        while e - s > max_chars:
            spans.append((s, s + max_chars))
            s += max_chars
        spans.append((s, e))
    return spans


def chunk(document: Document, max_chars: int = DEFAULT_CHUNK_CHARS) -> list[Chunk]:
    """The document's chunks, in order."""
    spans: list[tuple[int, int]] = []
    for paragraph in _PARAGRAPH.finditer(document.text):
        spans.extend(_pieces(document.text, paragraph.start(), paragraph.end(), max_chars))
    chunks: list[Chunk] = []
    current: tuple[int, int] | None = None
    for start, end in spans:
        if current is not None and end - current[0] <= max_chars:
            current = (current[0], end)
            continue
        if current is not None:
            chunks.append(_make(document, len(chunks), *current))
        current = (start, end)
    if current is not None:
        chunks.append(_make(document, len(chunks), *current))
    return chunks


def _make(document: Document, index: int, start: int, end: int) -> Chunk:
    return Chunk(document.id, index, start, end, document.text[start:end])
