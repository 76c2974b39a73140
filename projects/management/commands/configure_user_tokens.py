"""`manage.py configure_user_tokens`: how a project verifies its apps' user tokens (docs/protocol.md#identity-by-token)."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from projects.user_tokens import user_token_settings_errors


class Command(BaseCommand):
    help = ("Sets how a project verifies the user tokens its apps exchange at POST /oauth/token: an HS256 "
            "secret, a PEM public key (RS256/ES256/EdDSA) or a JWKS URL, and the claims checked.")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project name.")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--hs256-secret", help="Shared secret of HS256-signed user tokens (32 bytes or more).")
        source.add_argument("--public-key-file", type=Path, help="PEM file of the public key of signed user tokens.")
        source.add_argument("--jwks-url", help="JWKS URL of the identity provider.")
        parser.add_argument("--issuer", default="", help="Required `iss` (default: not checked).")
        parser.add_argument("--audience", default="", help="Required `aud` (default: not checked).")
        parser.add_argument("--user-claim", default="sub", help="The claim that names the end user (default: sub).")

    def handle(self, *args, project, hs256_secret, public_key_file, jwks_url, issuer, audience, user_claim,
               **options):
        row = Project.objects.filter(name=project).first()
        if row is None:
            raise CommandError(f"No project named {project!r}.")
        public_key = ""
        if public_key_file is not None:
            try:
                public_key = public_key_file.read_text()
            except (OSError, UnicodeError) as exc:
                raise CommandError(f"Cannot read {public_key_file}: {exc}") from None
        values = {"user_token_hs256_secret": hs256_secret or "", "user_token_public_key": public_key,
                  "user_token_jwks_url": jwks_url or "", "user_token_issuer": issuer,
                  "user_token_audience": audience, "user_token_claim": user_claim}
        errors = user_token_settings_errors(hs256_secret=values["user_token_hs256_secret"], public_key=public_key,
                                 jwks_url=values["user_token_jwks_url"], claim=user_claim)
        if errors:
            raise CommandError(" ".join(sorted(set(errors.values()))))
        # Replaces the project's settings as a whole: the key sources not given are cleared.
        Project.objects.filter(pk=row.pk).update(**values)
        source = "an HS256 secret" if hs256_secret else "a public key" if public_key else f"the JWKS at {jwks_url}"
        self.stdout.write(f"Project {row.name} now verifies user tokens with {source}.")
