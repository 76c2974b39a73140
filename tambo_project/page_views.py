"""The browser chat page and its login/logout: plain Django views, no API key anywhere in the HTML.

The page talks to `/v1` and `/api` with the session cookie and the CSRF token (see auth.py); the
JavaScript is static ES modules under static/tambo/.
"""
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from projects.auth import principal_for_user
from projects.voice import UNAVAILABLE_DETAIL, transcription_available

# The microphone's tooltip when the project has no transcription model: how to add one.
VOICE_HELP = "Voice input is off. " + UNAVAILABLE_DETAIL


@login_required
@ensure_csrf_cookie
def chat_page(request):
    # Without a transcription model the microphone says how to add one (docs/images-and-voice.md).
    voice = transcription_available(principal_for_user(request.user).project)
    return render(request, "tambo/chat.html", {"username": request.user.get_username(), "voice": voice,
                                               "voice_help": VOICE_HELP})


login_view = auth_views.LoginView.as_view(
    template_name="tambo/login.html", redirect_authenticated_user=True, next_page="/")
logout_view = auth_views.LogoutView.as_view(next_page="/login/")
