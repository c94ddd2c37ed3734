# SPDX-License-Identifier: Apache-2.0
"""Django: the ASGI lifespan opens a tocsin Client per web worker; views and management
commands enqueue. One file here; in a project the pieces go where the comments say.

    cd examples
    TOCSIN_STORE=sqlite:///app.db uvicorn web_django:application --workers 4
    tocsin run web_jobs:main --workers 2 --store sqlite:///app.db
    TOCSIN_STORE=sqlite:///app.db python web_django.py send_welcome 42   (the command)

Run without arguments it checks itself in one process: python examples/web_django.py
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import django
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.http import HttpRequest, JsonResponse
from django.urls import path
from web_jobs import ASGIApp, Scope, check, lifespan_of, send_welcome, store_url

from tocsin import Client

# -- settings.py ------------------------------------------------------------------------
settings.configure(
    DEBUG=False,
    SECRET_KEY="example-only-not-secret",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=[],
)
django.setup()

# -- the project's tocsin module: one Client per process, opened by the lifespan ----------
CLIENT: Client | None = None


def tocsin_client() -> Client:
    if CLIENT is None:
        raise RuntimeError("the tocsin Client is opened by the ASGI lifespan (see asgi.py)")
    return CLIENT


# -- views.py -----------------------------------------------------------------------------
async def signup(request: HttpRequest, user_id: int) -> JsonResponse:
    if request.method != "POST":
        return JsonResponse({"error": "POST only"}, status=405)
    run_id = await tocsin_client().jobs.enqueue(send_welcome, user_id, id=f"welcome-{user_id}")
    return JsonResponse({"job": run_id}, status=202)


# -- urls.py ------------------------------------------------------------------------------
urlpatterns = [path("signup/<int:user_id>", signup)]


# -- asgi.py: Django's handler serves HTTP only and refuses lifespan, so the lifespan ------
# -- is handled here and everything else goes to Django -----------------------------------
def with_tocsin(django_app: ASGIApp) -> ASGIApp:
    async def app(scope: Scope, receive: Any, send: Any) -> None:
        global CLIENT
        if scope["type"] != "lifespan":
            await django_app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                CLIENT = Client(store_url())
                await CLIENT.open()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if CLIENT is not None:
                    await CLIENT.close()
                    CLIENT = None
                await send({"type": "lifespan.shutdown.complete"})
                return

    return app


def _application() -> ASGIApp:
    from django.core.asgi import get_asgi_application

    django_app: Any = get_asgi_application()
    return with_tocsin(django_app)


application = _application()


# -- management/commands/send_welcome.py --------------------------------------------------
class Command(BaseCommand):  # type: ignore[misc]  # Django has no type hints
    help = "Enqueue the welcome mail of a user (tocsin workers send it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        # Commands are synchronous: a short-lived Client inside asyncio.run.
        async def enqueue() -> str:
            async with Client(store_url()) as client:
                user_id = options["user_id"]
                return await client.jobs.enqueue(send_welcome, user_id, id=f"welcome-{user_id}")

        self.stdout.write(f"enqueued {asyncio.run(enqueue())}")


async def _post(user_id: int) -> int:
    import httpx

    # The management command, from a thread as `manage.py` would run it (its own loop).
    await asyncio.to_thread(call_command, Command(), str(user_id + 1))
    async with lifespan_of(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            return (await http.post(f"/signup/{user_id}")).status_code


if __name__ == "__main__":
    if sys.argv[1:2] == ["send_welcome"]:
        call_command(Command(), *sys.argv[2:])
    else:
        asyncio.run(check(_post))
