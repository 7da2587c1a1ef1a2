"""The inline completion service: debounce, cancel, reuse, cache, then the model.

One request per keystroke is normal (VS Code asks on every change and cancels the previous
request). Each request waits ``debounceMs`` of quiet; a newer request for the same document,
or ``$/cancelRequest``, ends it, and a model request already under way is cancelled with it
(its HTTP stream closed, so the endpoint stops generating). A suggestion the user is typing
through is answered from memory, and the same context is answered from the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from driveros_lsp.inline._accepted import AcceptanceCounts
from driveros_lsp.inline._cache import SuggestionCache
from driveros_lsp.inline._context import ChunkIndex, OtherFile, build_request
from driveros_lsp.inline._next_edit import (
    EditHistory,
    NextEdit,
    model_suggestion,
    rename_suggestion,
)
from driveros_lsp.inline._post import clean
from driveros_lsp.protocol import CMD_INLINE_ACCEPTED

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from driveros.llm import Provider
    from driveros.llm.fim import FimProvider, FimRequest
    from driveros_lsp._server import DriverosLanguageServer
    from driveros_lsp._settings import InlineCompletionSettings, Settings

logger = logging.getLogger(__name__)


def _is_trusted(root: Path) -> bool:
    """In the user's trust store (never asks). Blocking."""
    from driveros.trust import TrustStore

    try:
        return TrustStore.default().is_trusted(root)
    except Exception:  # an unreadable store: untrusted is the safe answer
        return False


def _load_provider(
    root: Path, settings: Settings, inline: InlineCompletionSettings
) -> tuple[FimProvider, Provider | None]:
    """The FIM provider the settings name, configured as the agent's is (the user's config,
    a trusted workspace's .env, the environment), and with ``nextEdit`` on the chat provider
    of the same endpoint. Blocking."""
    from driveros.config import load_environment
    from driveros.llm.fim import ChatFim, fim_from_env
    from driveros.runs import pick_provider

    env = load_environment(cwd=root, trusted=_is_trusted(root))
    for warning in env.warnings:
        logger.warning("%s", warning)
    name = pick_provider(env, inline.provider or settings.provider)
    fim = fim_from_env(name, env, model=inline.model, api=inline.api)
    chat: Provider | None = None
    if isinstance(fim, ChatFim):
        chat = fim.chat
    elif inline.next_edit:
        chat_fim = fim_from_env(name, env, model=inline.model, api="chat")
        assert isinstance(chat_fim, ChatFim)
        chat = chat_fim.chat
    return fim, chat


class InlineService:
    """Answers ``textDocument/inlineCompletion`` for one server."""

    def __init__(self, server: DriverosLanguageServer) -> None:
        self._server = server
        self._generation: dict[str, int] = {}
        self._inflight: dict[str, asyncio.Task[str]] = {}
        self._provider: FimProvider | None = None
        self._chat: Provider | None = None
        self.history = EditHistory()
        self._provider_key: tuple[Any, ...] | None = None
        self._provider_lock = asyncio.Lock()
        self._told: str | None = None
        self.cache = SuggestionCache()
        self.index = ChunkIndex()
        self.counts = AcceptanceCounts()
        #: uri -> (version, monotonic time it was last seen changed)
        self._versions: dict[str, tuple[int | None, float]] = {}
        #: Model requests sent (benchmarks and tests read it).
        self.model_requests = 0

    # ------------------------------------------------------------------ entry point

    async def complete(self, params: lsp.InlineCompletionParams) -> lsp.InlineCompletionList | None:
        settings = await self._server.current_settings()
        inline = settings.inline_completion
        if not inline.enabled:
            return None
        uri = params.text_document.uri
        generation = self._generation.get(uri, 0) + 1
        self._generation[uri] = generation
        previous = self._inflight.pop(uri, None)
        if previous is not None:
            previous.cancel()  # the user typed on: the old answer is of no use
        doc = self._server.workspace.get_text_document(uri)
        text = doc.source
        offset = doc.offset_at_position(params.position)
        prefix, suffix = text[:offset], text[offset:]
        self._observe()
        self.history.observe(uri, text)
        if inline.next_edit:
            lines = text.split("\n")
            guess = rename_suggestion(self.history, uri, lines, params.position.line)
            if guess is not None and guess.confidence >= inline.next_edit_confidence:
                return self._next_edit_answer(doc, lines, guess)
        reused = self.cache.reuse(uri, prefix, suffix)
        if reused is not None:
            return self._answer(params.position, reused, "reuse")
        if inline.debounce_ms:
            await asyncio.sleep(inline.debounce_ms / 1000)
        if self._generation.get(uri) != generation:
            return None  # superseded while waiting
        root, path = self._paths(uri)
        req = build_request(
            text,
            offset,
            path=path,
            language=doc.language_id,
            others=self._others(uri, root),
            index=self.index,
            context_tokens=inline.context_tokens,
            max_tokens=inline.max_tokens,
        )
        if req is None:
            return None  # a secret file: nothing is sent
        provider = await self._provider_for(root, settings, inline)
        if provider is None:
            return None
        key = self._key(provider, req)
        raw = self.cache.get(key)
        if raw is None:
            raw = await self._ask(uri, provider, req)
            if raw is None:
                return None
            self.cache.put(key, raw)
        completion = clean(raw, prefix=prefix, suffix=suffix)
        if not completion:
            if inline.next_edit and self._chat is not None:
                return await self._model_next_edit(doc, params.position.line, path, inline)
            return None
        self.cache.shown(uri, prefix, suffix, completion)
        return self._answer(params.position, completion, f"{provider.name}/{provider.model}")

    # ------------------------------------------------------------------ pieces

    def _answer(self, pos: lsp.Position, text: str, model: str) -> lsp.InlineCompletionList:
        if self.counts.shown(model):
            self._flush_soon()
        command = lsp.Command(
            title="driveros: suggestion accepted",
            command=CMD_INLINE_ACCEPTED,
            arguments=[{"model": model, "chars": len(text)}],
        )
        item = lsp.InlineCompletionItem(
            insert_text=text, range=lsp.Range(start=pos, end=pos), command=command
        )
        return lsp.InlineCompletionList(items=[item])

    def _next_edit_answer(
        self, doc: TextDocument, lines: list[str], edit: NextEdit
    ) -> lsp.InlineCompletionList:
        base = sum(len(line) + 1 for line in lines[: edit.line])
        start = doc.client_position_at_offset(base + edit.start)
        end = doc.client_position_at_offset(base + edit.end)
        model = f"next-edit/{edit.source}"
        if self.counts.shown(model):
            self._flush_soon()
        command = lsp.Command(
            title="driveros: suggestion accepted",
            command=CMD_INLINE_ACCEPTED,
            arguments=[{"model": model, "chars": len(edit.new_text), "nextEdit": True}],
        )
        item = lsp.InlineCompletionItem(
            insert_text=edit.new_text,
            range=lsp.Range(start=start, end=end),
            filter_text=lines[edit.line][edit.start : edit.end],
            command=command,
        )
        return lsp.InlineCompletionList(items=[item])

    async def _model_next_edit(
        self, doc: TextDocument, cursor_line: int, path: str, inline: InlineCompletionSettings
    ) -> lsp.InlineCompletionList | None:
        chat = self._chat
        if chat is None:
            return None
        text = doc.source
        lines = text.split("\n")
        self.model_requests += 1
        try:
            edit = await model_suggestion(chat, self.history, lines, cursor_line, path)
        except Exception as exc:  # a provider failure: no suggestion
            self._tell(f"driveros: next-edit suggestion failed: {exc}")
            return None
        if edit is None or edit.confidence < inline.next_edit_confidence:
            return None
        if doc.source != text:
            return None  # the user typed on meanwhile
        return self._next_edit_answer(doc, lines, edit)

    def accepted(self, model: str) -> dict[str, Any]:
        """``driveros.inlineCompletion.accepted``: count it for the item's model; the answer is
        ``InlineAcceptedResult``."""
        self.counts.accepted(model)
        self._flush_soon()
        return {"counted": True}

    def _flush_soon(self) -> None:
        task = asyncio.ensure_future(asyncio.to_thread(self.counts.flush))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    def _paths(self, uri: str) -> tuple[Path | None, str]:
        from driveros_lsp.features.documents import relative_path

        try:
            root: Path | None = self._server.workspace_root()
        except LookupError:
            root = None
        rel = relative_path(root, uri) if root is not None else None
        if rel is not None:
            return root, rel
        fs = to_fs_path(uri)
        return root, fs or uri

    def _observe(self) -> None:
        """Note which open documents changed since the last request (recently edited)."""
        now = time.monotonic()
        seen = {}
        for uri, doc in self._server.workspace.text_documents.items():
            old = self._versions.get(uri)
            if old is None or old[0] != doc.version:
                seen[uri] = (doc.version, now if old is not None else 0.0)
            else:
                seen[uri] = old
        self._versions = seen
        # closed documents: nothing of them is kept
        self.history.forget(set(seen))
        for uri in [u for u in self._generation if u not in seen and u not in self._inflight]:
            del self._generation[uri]

    def _others(self, uri: str, root: Path | None) -> list[OtherFile]:
        from driveros_lsp.features.documents import relative_path

        if root is None:
            return []
        others = []
        for other_uri, doc in self._server.workspace.text_documents.items():
            if other_uri == uri:
                continue
            rel = relative_path(root, other_uri)
            if rel is None:
                continue  # only the workspace's own files are context
            others.append(OtherFile(rel, doc.source, self._versions.get(other_uri, (0, 0.0))[1]))
        self.index.forget_except({o.path for o in others})
        return others

    @staticmethod
    def _key(provider: FimProvider, req: FimRequest) -> str:
        blob = json.dumps([provider.name, provider.model, provider.api, req.model_dump()])
        return hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()

    async def _provider_for(
        self, root: Path | None, settings: Settings, inline: InlineCompletionSettings
    ) -> FimProvider | None:
        from driveros import DriverosError

        where = root or Path.cwd()
        key = (
            where,
            settings.provider,
            inline.provider,
            inline.model,
            inline.api,
            inline.next_edit,
        )
        async with self._provider_lock:
            if key == self._provider_key:
                return self._provider
            old, self._provider = self._provider, None
            old_chat, self._chat = self._chat, None
            if old is not None:
                await old.aclose()
            if old_chat is not None:  # closing a client twice (the provider's own) is harmless
                await old_chat.aclose()
            self._provider_key = key
            try:
                self._provider, self._chat = await asyncio.to_thread(
                    _load_provider, where, settings, inline
                )
            except DriverosError as exc:
                self._tell(f"driveros: inline completions are off: {exc}")
                return None
            return self._provider

    def _tell(self, message: str) -> None:
        if self._told != message:
            self._told = message
            self._server.log(message, lsp.MessageType.Warning)

    async def _ask(self, uri: str, provider: FimProvider, req: FimRequest) -> str | None:
        task = asyncio.create_task(self._fetch(provider, req))
        self._inflight[uri] = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                task.cancel()  # $/cancelRequest: the stream goes with the request
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise
            return None  # a newer request cancelled the model call
        except Exception as exc:  # a provider or transport failure: no suggestion
            from driveros import DriverosError

            if not isinstance(exc, DriverosError):
                logger.exception("inline: completion failed")
            self._tell(f"driveros: inline completion failed: {exc}")
            return None
        finally:
            if self._inflight.get(uri) is task:
                del self._inflight[uri]

    async def _fetch(self, provider: FimProvider, req: FimRequest) -> str:
        self.model_requests += 1
        pieces: list[str] = []
        one_line = req.stop == ("\n",)
        stream = provider.stream(req)
        async with contextlib.aclosing(stream):  # type: ignore[type-var]
            async for piece in stream:
                pieces.append(piece)
                if one_line and "\n" in piece:
                    break  # the line is done: close the stream, stop paying for tokens
        text = "".join(pieces)
        for stop in req.stop:
            if stop in text:
                text = text[: text.index(stop)]
        return text

    async def aclose(self) -> None:
        for task in list(self._inflight.values()):
            task.cancel()
        self._inflight.clear()
        if self._chat is not None:  # closing a client twice (the provider's own) is harmless
            await self._chat.aclose()
        self._chat = None
        if self._provider is not None:
            await self._provider.aclose()
            self._provider = None
        await asyncio.to_thread(self.counts.flush)
