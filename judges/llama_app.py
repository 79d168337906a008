"""llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, the same arguments)
whose model list says each model's context: GET /v1/models gives `max_model_len` (vLLM's name
for it), so that judges.run counts a prompt against it before sending it, with no
`--context-tokens`. `judges.serve` runs this module; nothing else imports it.

    python -m judges.llama_app --model FILE.gguf --model_alias smollm2 --n_ctx 8192 ...
"""
from __future__ import annotations

OWNED_BY = "nlce judges.serve"  # how judges.run knows the server is judges.serve's


def create_app(make_app, server_settings, model_settings):
    """llama-cpp-python's app (`make_app`), its /v1/models answered with the contexts."""
    from fastapi.routing import APIRoute

    app = make_app(server_settings=server_settings, model_settings=model_settings)
    contexts = {(m.model_alias or m.model): m.n_ctx for m in model_settings}

    async def models() -> dict:
        return {"object": "list", "data": [
            {"id": alias, "object": "model", "owned_by": OWNED_BY, "permissions": [],
             "max_model_len": n_ctx} for alias, n_ctx in contexts.items()]}

    app.router.routes.insert(0, APIRoute("/v1/models", models, methods=["GET"]))  # before theirs
    return app


def main() -> None:
    from llama_cpp.server import __main__ as server

    make_app = server.create_app
    server.create_app = lambda **settings: create_app(make_app, **settings)
    server.main()


if __name__ == "__main__":
    main()
