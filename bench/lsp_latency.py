"""How long `tensorconv server` takes to publish diagnostics after a change, over stdio.

    python bench/lsp_latency.py [--lines 2000] [--changes 100] [--warmup 10] [--edit digit|line] [--debounce-ms 0]

Starts the real server (``python -m flake8_tensorconv server``) the way an editor does,
opens a generated file of about ``--lines`` lines in which every function converts
between torch and NumPy (every rule's trigger is written many times, and most lines are
analysed), and then, ``--warmup`` times untimed and ``--changes`` times timed, edits the
middle of the file (an incremental change) and waits for the diagnostics of that version.

``--edit digit`` (the default) changes a digit in a function's body, as typing in a line
does; ``--edit line`` adds a line there and removes it at the next change, as Enter and
Backspace do, which moves everything below it.

Latency is the time from writing the ``didChange`` notification to reading the
``publishDiagnostics`` of its version, minus the debounce: the server waits that long
after a change on purpose (to lint once when typing pauses), and ``--debounce-ms`` sets it
through ``initializationOptions`` (0 by default, so that nothing is subtracted). Prints
p50 / p95 / max in milliseconds, the server's mean CPU time per change (from /proc, where
there is one: on a shared machine the wall figures also hold time spent waiting for a
core), and the target (p95 <= 50 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_P95_MS = 50.0

# Every line but the first and the last converts between torch and NumPy (a trigger the
# engine must analyse); a third of them are mistakes that it reports.
FUNCTION = '''\
def step_{n}(model, batch, labels, features):
    scores = model(batch)
    with torch.no_grad():
        preview = scores.cpu().numpy()
    probabilities = scores.softmax(dim=1).detach().cpu().numpy()
    mask = torch.as_tensor(labels) > 0
    weights = torch.from_numpy(np.bincount(labels).astype(np.float32))
    ranked = scores.cpu().detach()
    values = scores.numpy()
    table = torch.Tensor(labels)
    snapshot = probabilities.copy()
    snapshot[0] = {n}
    return preview, mask, weights, ranked, values, table, snapshot


'''


def generated_file(lines: int) -> str:
    header = "import numpy as np\nimport torch\n\n\n"
    per_function = FUNCTION.count("\n")
    return header + "".join(FUNCTION.format(n=n) for n in range(max(1, (lines - 4) // per_function)))


class Server:
    """A minimal LSP client over the server's stdin and stdout."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flake8_tensorconv", "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT
        )
        self.next_id = 0

    def send(self, method: str, params: object, request: bool = False) -> int | None:
        message: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return message.get("id")  # type: ignore[return-value]

    def receive(self) -> dict:
        length = 0
        while True:
            line = self.process.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError("the server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.process.stdout.read(length))  # type: ignore[union-attr]

    def wait_for(self, predicate) -> dict:  # noqa: ANN001 (a callable on one message)
        while True:
            message = self.receive()
            if message.get("method") in ("client/registerCapability", "workspace/configuration") and "id" in message:
                self.answer(message["id"])
            if predicate(message):
                return message

    def answer(self, message_id: object) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": message_id, "result": None}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]

    def close(self) -> None:
        request = self.send("shutdown", None, request=True)
        self.wait_for(lambda message: message.get("id") == request)
        self.send("exit", None)
        self.process.wait(timeout=30)


def cpu_seconds(pid: int) -> float | None:
    """The CPU time a process has used (user + system), from /proc; None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(lines: int, changes: int, warmup: int, edit: str = "digit", debounce_ms: float = 0.0) -> tuple[list[float], float | None, int, int]:
    text = generated_file(lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "dense.py"
        path.write_text(text, encoding="utf-8")
        uri = path.as_uri()
        server = Server()
        request = server.send(
            "initialize",
            {"processId": None, "rootUri": Path(folder).as_uri(), "capabilities": {}, "initializationOptions": {"debounceMs": debounce_ms}},
            request=True,
        )
        server.wait_for(lambda message: message.get("id") == request)
        server.send("initialized", {})
        server.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
        opened = server.wait_for(lambda message: message.get("method") == "textDocument/publishDiagnostics")
        findings = len(opened["params"]["diagnostics"])
        # `snapshot[0] = N` of the middle function: a digit changes, the analysis is redone.
        middle = text.count("\n") // 2
        line = next(i for i, content in enumerate(text.splitlines()) if i >= middle and "snapshot[0] = " in content)
        column = text.splitlines()[line].index("= ") + 2
        timings = []
        cpu_before = None
        for version in range(2, 2 + warmup + changes):
            if version == 2 + warmup:
                cpu_before = cpu_seconds(server.process.pid)
            if edit == "line" and version % 2:  # remove the empty line the previous change added
                change = {"range": {"start": {"line": line, "character": 0}, "end": {"line": line + 1, "character": 0}}, "text": ""}
            elif edit == "line":
                change = {"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}, "text": "\n"}
            else:
                change = {"range": {"start": {"line": line, "character": column}, "end": {"line": line, "character": column + 1}}, "text": str(version % 10)}
            started = time.perf_counter()
            server.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
            server.wait_for(lambda message, v=version: message.get("method") == "textDocument/publishDiagnostics" and message["params"].get("version") == v)
            if version >= 2 + warmup:
                timings.append((time.perf_counter() - started) * 1000 - debounce_ms)
        cpu_after = cpu_seconds(server.process.pid)
        cpu_per_change = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) * 1000 / changes
        server.close()
    return timings, cpu_per_change, text.count("\n"), findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--edit", choices=("digit", "line"), default="digit", help="change a digit (default), or add and remove a line")
    parser.add_argument("--debounce-ms", type=float, default=0.0, help="the server's debounce, subtracted from each timing (default 0)")
    args = parser.parse_args()
    timings, cpu_per_change, lines, findings = measure(args.lines, args.changes, args.warmup, args.edit, args.debounce_ms)
    quantiles = statistics.quantiles(timings, n=100, method="inclusive")
    p50, p95 = statistics.median(timings), quantiles[94]
    print(f"file: {lines} lines, {findings} diagnostics; {len(timings)} timed changes ({args.edit}) after {args.warmup} untimed")
    print(f"diagnostics after a change, minus the {args.debounce_ms:g} ms debounce: p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {max(timings):.1f} ms")
    if cpu_per_change is not None:
        # What the server itself spent: on a loaded machine the wall figures above also hold time spent waiting for a core.
        print(f"server CPU time per change (mean): {cpu_per_change:.1f} ms")
    print(f"target p95 <= {TARGET_P95_MS:.0f} ms: {'met' if p95 <= TARGET_P95_MS else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
