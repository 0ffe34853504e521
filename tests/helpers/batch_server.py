"""A conformance test server for the two provider batch APIs, built from their published API references.

It is not the providers' service: it is what their references (OpenAI's Files + Batch API, Anthropic's Messages
and Message Batches API) say a client may send and must expect back, enforced strictly, so the official `openai`
and `anthropic` SDKs and tailorbench's batch mode can be tested over real HTTP on loopback:

- keys: `Authorization: Bearer KEY` (OpenAI); `x-api-key: KEY` or `Authorization: Bearer KEY` plus an
  `anthropic-version` header (Anthropic); 401 with the provider's error shape otherwise;
- OpenAI: `POST /v1/files` (multipart, `purpose=batch`, at most `max_bytes`), `POST /v1/batches`
  (`endpoint=/v1/chat/completions`, `completion_window=24h`, metadata at most 16 pairs), `GET /v1/batches[/ID]`,
  `POST /v1/batches/ID/cancel`, `GET /v1/files/ID/content`; the input is validated as the reference says
  (every line a JSON object with a unique `custom_id`, `method` POST, `url` equal to the endpoint, a `body`
  with `model` and `messages`, one model per file, at most `max_requests` lines): a bad file makes the batch
  `failed` with its `errors` list (code, message, line);
- Anthropic: `POST /v1/messages/batches` (1..`max_requests` requests, `custom_id` matching
  `^[a-zA-Z0-9_-]{1,64}$` and unique, `params` with `model`, `max_tokens`, `messages`; at most `max_bytes` in
  all), `GET /v1/messages/batches[/ID]`, `POST .../cancel`, `GET .../results` (JSONL);
- both synchronous endpoints (`/v1/chat/completions`, `/v1/messages`) answer the same request with the same
  text as a batch line does, so a synchronous run and a batch run can be compared verdict by verdict.

Batches move through their states by wall-clock time (`validate_s`, `process_s`, `finalize_s`), every
timestamp stored in `state_dir`, so a server stopped and started again on the same directory carries on where
it was. Faults, all deterministic: `fail_first` (the first submission of every custom_id whose hash falls under
the share answers 500), `expire_batches` (those batch ordinals, 1-based, expire after answering about half of
their requests), `corrupt_batches` (their output gets one malformed line), `batches=False` (a server without
batch support: 404). Every submitted custom_id is recorded (`submitted`), so tests count duplicates.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.helpers.loopback import LoopbackServer, bind

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
OPENAI_MAX_REQUESTS, OPENAI_MAX_BYTES = 50_000, 200 * 1024 * 1024
ANTHROPIC_MAX_REQUESTS, ANTHROPIC_MAX_BYTES = 100_000, 256 * 1024 * 1024


def answer_text(messages: list[dict[str, Any]]) -> str:
    """The one deterministic answer to a chat: a verdict letter from a hash of the whole conversation."""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).digest()
    return "A" if digest[0] % 2 == 0 else "B"


def _tokens(messages: list[dict[str, Any]]) -> int:
    return max(1, sum(len(str(m.get("content", ""))) for m in messages) // 4)


def _share(custom_id: str) -> float:
    return int(hashlib.sha256(custom_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def openai_completion(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    text = answer_text(messages)
    prompt = _tokens(messages)
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1}}


def anthropic_message(params: dict[str, Any]) -> dict[str, Any]:
    messages = list(params["messages"])
    if params.get("system"):
        messages = [{"role": "system", "content": params["system"]}, *messages]
    text = answer_text(messages)
    return {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant", "model": params["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": _tokens(messages), "output_tokens": 1}}


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e6):06d}Z"


@dataclass
class BatchServer(LoopbackServer):
    """Start with `.start()`, stop with `.stop()` (or a `with` block); `state_dir` keeps everything."""

    state_dir: Path
    key: str | None = "test-key"
    batches: bool = True
    validate_s: float = 0.0
    process_s: float = 0.0
    finalize_s: float = 0.0
    fail_first: float = 0.0
    refuse_share: float = 0.0
    expire_batches: tuple[int, ...] = ()
    corrupt_batches: tuple[int, ...] = ()
    openai_max_requests: int = OPENAI_MAX_REQUESTS
    openai_max_bytes: int = OPENAI_MAX_BYTES
    anthropic_max_requests: int = ANTHROPIC_MAX_REQUESTS
    anthropic_max_bytes: int = ANTHROPIC_MAX_BYTES
    port: int = 0
    #: keep every raw request (method, path, headers in order, body) for conformance comparisons
    record: bool = False
    recorded: list[tuple[str, str, list[tuple[str, str]], bytes]] = field(default_factory=list)
    sync_calls: int = 0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _state: dict[str, Any] = field(default_factory=dict)
    _requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    # -- state on disk ---------------------------------------------------------------------------------------

    def _load(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        path = self.state_dir / "state.json"
        self._state = json.loads(path.read_text()) if path.exists() else {
            "files": {}, "batches": {}, "order": [], "submitted": [], "seen": {}}

    def _save(self) -> None:
        tmp = self.state_dir / "state.json.tmp"
        tmp.write_text(json.dumps(self._state))
        tmp.replace(self.state_dir / "state.json")

    def _write_file(self, file_id: str, data: bytes, purpose: str, name: str) -> dict[str, Any]:
        (self.state_dir / file_id).write_bytes(data)
        meta = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": name, "purpose": purpose, "status": "processed", "expires_at": None,
                "status_details": None}
        self._state["files"][file_id] = meta
        return meta

    @property
    def submitted(self) -> list[str]:
        """Every custom_id submitted in a batch, in order (duplicates kept)."""
        with self._lock:
            return list(self._state.get("submitted", []))

    def duplicates(self) -> dict[str, int]:
        return {k: n for k, n in Counter(self.submitted).items() if n > 1}

    def batch_objects(self) -> list[dict[str, Any]]:
        """Every batch as stored, with its requests, in creation order."""
        with self._lock:
            return [{**self._refresh(self._state["batches"][b]), "requests": self._reqs(self._state["batches"][b])}
                    for b in self._state["order"]]

    def _reqs(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        found = self._requests.get(batch["id"])
        if found is None:
            found = self._requests[batch["id"]] = json.loads(
                (self.state_dir / f"{batch['id']}.requests.json").read_text())
        return found

    # -- life cycle ------------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> BatchServer:
        self._load()
        server = self
        handler = type("Handler", (_Handler,), {"app": server})
        self._serve(bind(self.port, handler))
        return self

    # -- answering one line ----------------------------------------------------------------------------------

    def _first_time(self, custom_id: str) -> bool:
        seen = self._state["seen"]
        seen[custom_id] = seen.get(custom_id, 0) + 1
        return bool(seen[custom_id] == 1)

    def _fails(self, custom_id: str) -> bool:
        return self._first_time(custom_id) and _share(custom_id) < self.fail_first

    # -- batch states ----------------------------------------------------------------------------------------

    def _new_batch(self, provider: str, requests: list[dict[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
        ordinal = len(self._state["order"]) + 1
        prefix = "batch_" if provider == "openai" else "msgbatch_"
        batch = {"id": f"{prefix}{uuid.uuid4().hex[:24]}", "provider": provider, "ordinal": ordinal,
                 "created": time.time(), "cancel_at": None, "n": len(requests), "results": None,
                 "errors": None, **extra}
        # the requests apart from state.json, written once (state.json is rewritten at every change)
        (self.state_dir / f"{batch['id']}.requests.json").write_text(json.dumps(requests))
        self._requests[batch["id"]] = requests
        self._state["batches"][batch["id"]] = batch
        self._state["order"].append(batch["id"])
        self._state["submitted"].extend(r["custom_id"] for r in requests)
        self._save()
        return batch

    def _phase(self, batch: dict[str, Any]) -> str:
        if batch.get("errors"):
            return "failed"
        if batch["results"] is not None:
            return batch["end"]
        now = time.time()
        age = now - batch["created"]
        if batch["cancel_at"] is not None:
            return "ending_cancelled"
        if age < self.validate_s:
            return "validating"
        if age < self.validate_s + self.process_s:
            return "in_progress"
        if age < self.validate_s + self.process_s + self.finalize_s:
            return "finalizing"
        return "ending"

    def _refresh(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Move a batch on by the clock; once it ends its results are computed once and stored."""
        phase = self._phase(batch)
        if phase in ("ending", "ending_cancelled"):
            self._finish(batch, cancelled=phase == "ending_cancelled")
            self._save()
        return batch

    def _finish(self, batch: dict[str, Any], cancelled: bool) -> None:
        requests = self._reqs(batch)
        expire = batch["ordinal"] in self.expire_batches
        cut = len(requests) // 2 if (expire or cancelled) else len(requests)
        results: list[dict[str, Any]] = []
        for i, request in enumerate(requests):
            cid = request["custom_id"]
            if i >= cut:
                results.append({"custom_id": cid, "outcome": "cancelled" if cancelled else "expired"})
            elif _share(cid) >= 1 - self.refuse_share:
                results.append({"custom_id": cid, "outcome": "refused"})
            elif self._fails(cid):
                results.append({"custom_id": cid, "outcome": "error"})
            else:
                results.append({"custom_id": cid, "outcome": "ok"})
        batch["results"] = results
        batch["end"] = "cancelled" if cancelled else ("expired" if expire else "completed")
        batch["ended"] = time.time()
        if batch["provider"] == "openai":
            self._openai_output(batch)

    def _openai_output(self, batch: dict[str, Any]) -> None:
        by_id = {r["custom_id"]: r for r in self._reqs(batch)}
        out: list[str] = []
        err: list[str] = []
        for result in batch["results"]:
            cid = result["custom_id"]
            body = by_id[cid]["body"]
            line_id = f"batch_req_{uuid.uuid4().hex[:16]}"
            if result["outcome"] == "ok":
                out.append(json.dumps({"id": line_id, "custom_id": cid, "error": None, "response": {
                    "status_code": 200, "request_id": uuid.uuid4().hex, "body": openai_completion(body)}}))
            elif result["outcome"] == "refused":
                err.append(json.dumps({"id": line_id, "custom_id": cid, "error": None, "response": {
                    "status_code": 400, "request_id": uuid.uuid4().hex,
                    "body": {"error": {"message": "This request is not valid for this model.",
                                       "type": "invalid_request_error", "param": None, "code": None}}}}))
            elif result["outcome"] == "error":
                err.append(json.dumps({"id": line_id, "custom_id": cid, "error": None, "response": {
                    "status_code": 500, "request_id": uuid.uuid4().hex,
                    "body": {"error": {"message": "The server had an error processing your request.",
                                       "type": "server_error", "param": None, "code": None}}}}))
            else:
                code = "batch_expired" if result["outcome"] == "expired" else "batch_cancelled"
                err.append(json.dumps({"id": line_id, "custom_id": cid, "response": None, "error": {
                    "code": code, "message": f"This request could not be executed before the batch ended ({code})."}}))
        if batch["ordinal"] in self.corrupt_batches and out:
            out[len(out) // 2] = out[len(out) // 2][: len(out[len(out) // 2]) // 2]  # a torn line
        if out:
            batch["output_file_id"] = self._write_file(f"file-{uuid.uuid4().hex[:24]}",
                                                       ("\n".join(out) + "\n").encode(), "batch_output",
                                                       "batch_output.jsonl")["id"]
        if err:
            batch["error_file_id"] = self._write_file(f"file-{uuid.uuid4().hex[:24]}",
                                                      ("\n".join(err) + "\n").encode(), "batch_output",
                                                      "batch_errors.jsonl")["id"]

    # -- OpenAI views ----------------------------------------------------------------------------------------

    def openai_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        phase = self._phase(self._refresh(batch))
        status = {"ending": "completed", "ending_cancelled": "cancelling"}.get(phase, phase)
        total = batch["n"]
        done = failed = 0
        if batch["results"] is not None:
            done = sum(r["outcome"] == "ok" for r in batch["results"])
            failed = total - done
        created = batch["created"]
        return {
            "id": batch["id"], "object": "batch", "endpoint": batch["endpoint"], "errors": batch.get("errors"),
            "input_file_id": batch["input_file_id"], "completion_window": "24h", "status": status,
            "output_file_id": batch.get("output_file_id"), "error_file_id": batch.get("error_file_id"),
            "created_at": int(created), "in_progress_at": int(created + self.validate_s),
            "expires_at": int(created + 86400), "finalizing_at": None, "completed_at":
                int(batch["ended"]) if status == "completed" else None,
            "failed_at": int(created) if status == "failed" else None,
            "expired_at": int(batch["ended"]) if status == "expired" else None,
            "cancelling_at": int(batch["cancel_at"]) if batch["cancel_at"] else None,
            "cancelled_at": int(batch["ended"]) if status == "cancelled" else None,
            "request_counts": {"total": total, "completed": done, "failed": failed},
            "metadata": batch.get("metadata"),
        }

    def validate_openai(self, data: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(requests, errors) of an input file, as the Batch API reference describes its checks."""
        errors: list[dict[str, Any]] = []
        requests: list[dict[str, Any]] = []
        ids: set[str] = set()
        models: set[str] = set()
        lines = data.decode("utf-8", "replace").splitlines()
        if len(lines) > self.openai_max_requests:
            return [], [{"code": "too_many_requests", "line": None, "param": None,
                         "message": f"The input file has {len(lines)} requests; at most "
                                    f"{self.openai_max_requests} are allowed per batch."}]
        for number, line in enumerate(lines, 1):
            def bad(code: str, message: str, n: int = number) -> None:
                errors.append({"code": code, "message": message, "line": n, "param": None})
            try:
                row = json.loads(line)
            except ValueError:
                bad("invalid_json_line", "This line is not parseable as valid JSON.")
                continue
            if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
                bad("missing_required_parameter", "Each line needs a string custom_id.")
                continue
            if row["custom_id"] in ids:
                bad("duplicate_custom_id", f"The custom_id {row['custom_id']!r} appears more than once.")
            ids.add(row["custom_id"])
            if row.get("method") != "POST":
                bad("invalid_method", "The method of every request must be POST.")
            if row.get("url") != endpoint:
                bad("mismatched_endpoint", f"The url of every request must be the batch's endpoint {endpoint}.")
            body = row.get("body")
            if not isinstance(body, dict) or "model" not in body or not isinstance(body.get("messages"), list):
                bad("invalid_body", "The body must be a chat completion request with model and messages.")
                continue
            models.add(str(body["model"]))
            requests.append(row)
        if len(models) > 1:
            errors.append({"code": "mismatched_model", "line": None, "param": None,
                           "message": "Every request of a batch must use the same model."})
        return requests, errors

    # -- Anthropic views -------------------------------------------------------------------------------------

    def anthropic_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        phase = self._phase(self._refresh(batch))
        ended = batch["results"] is not None
        status = "ended" if ended else ("canceling" if phase == "ending_cancelled" else "in_progress")
        counts = {"processing": 0 if ended else batch["n"], "succeeded": 0, "errored": 0,
                  "canceled": 0, "expired": 0}
        for r in batch["results"] or []:
            counts[{"ok": "succeeded", "error": "errored", "refused": "errored", "cancelled": "canceled",
                    "expired": "expired"}[r["outcome"]]] += 1
        return {"id": batch["id"], "type": "message_batch", "processing_status": status,
                "request_counts": counts, "ended_at": _iso(batch.get("ended")), "created_at": _iso(batch["created"]),
                "expires_at": _iso(batch["created"] + 86400), "archived_at": None,
                "cancel_initiated_at": _iso(batch["cancel_at"]),
                "results_url": f"{self.url}/v1/messages/batches/{batch['id']}/results" if ended else None}

    def validate_anthropic(self, body: Any, size: int) -> str | None:
        """The first problem of a Message Batches create request, or None."""
        if size > self.anthropic_max_bytes:
            return f"request too large: {size} bytes; a batch may hold at most {self.anthropic_max_bytes} bytes"
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return "requests: a non-empty list is required"
        if len(requests) > self.anthropic_max_requests:
            return f"requests: at most {self.anthropic_max_requests} requests per batch, got {len(requests)}"
        ids: set[str] = set()
        for i, request in enumerate(requests):
            cid = request.get("custom_id") if isinstance(request, dict) else None
            if not isinstance(cid, str) or not CUSTOM_ID.match(cid):
                return f"requests.{i}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$"
            if cid in ids:
                return f"requests.{i}.custom_id: duplicate custom_id {cid!r}"
            ids.add(cid)
            params = request.get("params")
            if not isinstance(params, dict) or not params.get("model") or not isinstance(params.get("messages"), list):
                return f"requests.{i}.params: model and messages are required"
            if not isinstance(params.get("max_tokens"), int) or params["max_tokens"] < 1:
                return f"requests.{i}.params.max_tokens: an integer of at least 1 is required"
        return None

    def anthropic_results(self, batch: dict[str, Any]) -> bytes:
        by_id = {r["custom_id"]: r for r in self._reqs(batch)}
        lines = []
        for result in batch["results"]:
            cid = result["custom_id"]
            outcome = result["outcome"]
            if outcome == "ok":
                body: dict[str, Any] = {"type": "succeeded", "message": anthropic_message(by_id[cid]["params"])}
            elif outcome == "error":
                body = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "Internal server error"}}}
            elif outcome == "refused":
                body = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error", "message": "This request is not valid for this model."}}}
            else:
                body = {"type": "canceled" if outcome == "cancelled" else "expired"}
            lines.append(json.dumps({"custom_id": cid, "result": body}))
        if batch["ordinal"] in self.corrupt_batches and lines:
            lines[len(lines) // 2] = lines[len(lines) // 2][:10]
        return ("\n".join(lines) + "\n").encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, not after a delayed ACK
    app: BatchServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _openai_error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def _anthropic_error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(status, {"type": "error", "error": {"type": kind, "message": message}})

    def _presented_key(self) -> str | None:
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return auth[7:]
        return self.headers.get("x-api-key")

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        app = self.app
        if app.record:
            with app._lock:
                app.recorded.append((method, self.path, list(self.headers.items()), body))
        anthropic = path.startswith("/v1/messages")
        if app.key is not None and self._presented_key() != app.key:
            if anthropic:
                return self._anthropic_error(401, "invalid x-api-key", "authentication_error")
            return self._openai_error(401, "Incorrect API key provided.", "invalid_request_error")
        if anthropic and not self.headers.get("anthropic-version"):
            return self._anthropic_error(400, "anthropic-version: header is required")
        with app._lock:
            try:
                self._dispatch(method, path, query, body)
            except (ValueError, KeyError, TypeError) as exc:
                (self._anthropic_error if anthropic else self._openai_error)(400, f"malformed request: {exc}")

    def _dispatch(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> None:
        app = self.app
        if method == "GET" and path == "/v1/models":
            return self._send(200, {"object": "list", "data": []})
        if method == "POST" and path == "/v1/chat/completions":
            app.sync_calls += 1
            return self._send(200, openai_completion(json.loads(body)))
        if method == "POST" and path == "/v1/messages":
            app.sync_calls += 1
            params = json.loads(body)
            if not isinstance(params.get("max_tokens"), int):
                return self._anthropic_error(400, "max_tokens: Field required")
            return self._send(200, anthropic_message(params))
        if not app.batches:
            if path.startswith("/v1/messages"):
                return self._anthropic_error(404, f"Not found: {path}", "not_found_error")
            return self._openai_error(404, f"Invalid URL ({method} {path})")
        if path.startswith("/v1/messages/batches"):
            return self._anthropic(method, path, query, body)
        return self._openai(method, path, query, body)

    def _openai(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> None:
        app = self.app
        state = app._state
        if method == "POST" and path == "/v1/files":
            fields = _multipart(self.headers.get("Content-Type", ""), body)
            if fields.get("purpose", (b"", ""))[0] != b"batch":
                return self._openai_error(400, "purpose must be 'batch' for a batch input file")
            data, name = fields.get("file", (b"", ""))
            if len(data) > app.openai_max_bytes:
                return self._openai_error(400, f"File is too large: {len(data)} bytes; the batch input limit is "
                                               f"{app.openai_max_bytes} bytes.")
            meta = app._write_file(f"file-{uuid.uuid4().hex[:24]}", data, "batch", name)
            app._save()
            return self._send(200, meta)
        match = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
        if method == "GET" and match:
            if match.group(1) not in state["files"]:
                return self._openai_error(404, f"No such File object: {match.group(1)}")
            return self._send(200, (app.state_dir / match.group(1)).read_bytes(), "application/octet-stream")
        if method == "POST" and path == "/v1/batches":
            request = json.loads(body)
            if request.get("completion_window") != "24h":
                return self._openai_error(400, "completion_window: only '24h' is supported")
            endpoint = request.get("endpoint")
            if endpoint != "/v1/chat/completions":
                return self._openai_error(400, f"endpoint {endpoint!r} is not supported by this server")
            metadata = request.get("metadata")
            if metadata is not None and (not isinstance(metadata, dict) or len(metadata) > 16):
                return self._openai_error(400, "metadata: at most 16 key-value pairs")
            file_id = request.get("input_file_id")
            if file_id not in state["files"]:
                return self._openai_error(404, f"No such File object: {file_id}")
            requests, errors = app.validate_openai((app.state_dir / file_id).read_bytes(), endpoint)
            batch = app._new_batch("openai", requests, {"endpoint": endpoint, "input_file_id": file_id,
                                                        "metadata": metadata})
            if errors:
                batch["errors"] = {"object": "list", "data": errors}
                app._save()
            return self._send(200, app.openai_batch(batch))
        if method == "GET" and path == "/v1/batches":
            limit = int(query.get("limit", ["20"])[0])
            ids = [b for b in reversed(state["order"]) if state["batches"][b]["provider"] == "openai"]
            after = query.get("after", [None])[0]
            if after in ids:
                ids = ids[ids.index(after) + 1:]
            page = [app.openai_batch(state["batches"][b]) for b in ids[:limit]]
            return self._send(200, {"object": "list", "data": page, "has_more": len(ids) > limit,
                                    "first_id": page[0]["id"] if page else None,
                                    "last_id": page[-1]["id"] if page else None})
        match = re.fullmatch(r"/v1/batches/([\w-]+)(/cancel)?", path)
        if match and match.group(1) in state["batches"]:
            batch = state["batches"][match.group(1)]
            if match.group(2) and method == "POST":
                if batch["results"] is None and batch["cancel_at"] is None:
                    batch["cancel_at"] = time.time()
                    app._save()
                return self._send(200, app.openai_batch(batch))
            if method == "GET" and not match.group(2):
                return self._send(200, app.openai_batch(batch))
        if match:
            return self._openai_error(404, f"No such Batch object: {match.group(1)}")
        return self._openai_error(404, f"Invalid URL ({method} {path})")

    def _anthropic(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> None:
        app = self.app
        state = app._state
        if method == "POST" and path == "/v1/messages/batches":
            request = json.loads(body)
            problem = app.validate_anthropic(request, len(body))
            if problem is not None:
                return self._anthropic_error(413 if problem.startswith("request too large") else 400, problem)
            batch = app._new_batch("anthropic", request["requests"], {})
            return self._send(200, app.anthropic_batch(batch))
        if method == "GET" and path == "/v1/messages/batches":
            limit = int(query.get("limit", ["20"])[0])
            ids = [b for b in reversed(state["order"]) if state["batches"][b]["provider"] == "anthropic"]
            page = [app.anthropic_batch(state["batches"][b]) for b in ids[:limit]]
            return self._send(200, {"data": page, "has_more": len(ids) > limit,
                                    "first_id": page[0]["id"] if page else None,
                                    "last_id": page[-1]["id"] if page else None})
        match = re.fullmatch(r"/v1/messages/batches/([\w-]+)(/cancel|/results)?", path)
        if not match or match.group(1) not in state["batches"]:
            return self._anthropic_error(404, f"Not found: {path}", "not_found_error")
        batch = state["batches"][match.group(1)]
        tail = match.group(2)
        if tail == "/cancel" and method == "POST":
            if batch["results"] is None and batch["cancel_at"] is None:
                batch["cancel_at"] = time.time()
                app._save()
            return self._send(200, app.anthropic_batch(batch))
        if tail == "/results" and method == "GET":
            app._refresh(batch)
            if batch["results"] is None:
                return self._anthropic_error(400, "results are available once processing has ended")
            return self._send(200, app.anthropic_results(batch), "application/binary")
        if tail is None and method == "GET":
            return self._send(200, app.anthropic_batch(batch))
        return self._anthropic_error(404, f"Not found: {path}", "not_found_error")


def _multipart(content_type: str, body: bytes) -> dict[str, tuple[bytes, str]]:
    """Fields of a multipart/form-data body: name -> (value, filename)."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        raise ValueError("a multipart/form-data body with a boundary is required")
    out: dict[str, tuple[bytes, str]] = {}
    for part in body.split(b"--" + match.group(1).encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, value = part.lstrip(b"\r\n").partition(b"\r\n\r\n")
        disposition = head.decode("latin-1")
        name = re.search(r'name="([^"]*)"', disposition)
        filename = re.search(r'filename="([^"]*)"', disposition)
        if name:
            out[name.group(1)] = (value.removesuffix(b"\r\n"), filename.group(1) if filename else "")
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the server in its own process (`python -m tests.helpers.batch_server --state DIR`): prints its URL,
    then serves until killed; a kill and a start on the same directory carry on."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--key", default="test-key")
    parser.add_argument("--validate-s", type=float, default=0.0)
    parser.add_argument("--process-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    server = BatchServer(args.state, key=args.key, validate_s=args.validate_s, process_s=args.process_s,
                         port=args.port).start()
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
        sys.exit(0)


if __name__ == "__main__":
    main()
