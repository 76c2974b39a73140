"""Per-project server-side tools: built-in Python tools switched on per project, and MCP servers."""
from django.core.validators import RegexValidator
from django.db import models

from projects.identities import STORED_MAX_LENGTH


class ProjectTool(models.Model):
    """A built-in tool (from tools.registry) enabled for a project."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=64)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_project_tool")]

    def __str__(self) -> str:
        return self.name


class McpServer(models.Model):
    class Auth(models.TextChoices):
        NONE = "none", "none (or fixed headers)"
        PROJECT = "project", "OAuth: the project's authorisation"
        USER = "user", "OAuth: each end user's authorisation"

    class Transport(models.TextChoices):
        STDIO = "stdio", "stdio (local command)"
        HTTP = "http", "streamable HTTP"
        SSE = "sse", "HTTP+SSE (the 2024-11-05 transport)"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="mcp_servers")
    # The prefix of its tools as the model sees them: `<name>__<tool>`.
    name = models.CharField(
        max_length=40,
        validators=[RegexValidator(r"^[a-zA-Z0-9-]+$", "Letters, digits and hyphens only.")],
    )
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.STDIO)
    command = models.CharField(max_length=500, blank=True, default="")
    args = models.JSONField(default=list, blank=True)
    env = models.JSONField(default=dict, blank=True)
    url = models.URLField(max_length=500, blank=True, default="")
    headers = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    # Whose OAuth authorisation its calls carry (docs/tools.md#protected-mcp-servers): none, the
    # project's (an operator authorises once in the admin) or each end user's (the vault, McpToken).
    auth = models.CharField(max_length=8, choices=Auth.choices, default=Auth.NONE)
    oauth_scopes = models.CharField(max_length=500, blank=True, default="",
                                    help_text="Scopes to ask for, space-separated (blank: what the server names).")
    # A client registered by hand with the provider (its OAuth app); blank: the client ID metadata
    # document or dynamic registration, whichever the authorization server offers.
    oauth_client_id = models.CharField(max_length=300, blank=True, default="")
    oauth_client_secret = models.CharField(max_length=1000, blank=True, default="",
                                           help_text="Stored encrypted (SECRETS_KEYS), or env:NAME.")
    # The client dynamic registration gave us (encrypted JSON), shared by the project's and its users' grants.
    oauth_client = models.TextField(blank=True, default="", editable=False)

    class Meta:
        verbose_name = "MCP server"
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_mcp_server")]

    def __str__(self) -> str:
        return self.name


class McpToken(models.Model):
    """The vault: one OAuth grant for an MCP server, the project's (`user_key` "") or one end user's.

    `tokens` (the access and refresh tokens) are stored encrypted with SECRETS_KEYS (projects/secrets.py)
    and never leave the server."""

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tokens")
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="mcp_tokens")
    user_key = models.CharField(max_length=STORED_MAX_LENGTH, blank=True, default="")
    tokens = models.TextField(blank=True, default="")
    scope = models.CharField(max_length=1000, blank=True, default="")
    expires_at = models.FloatField(null=True, blank=True)  # epoch seconds; None: no expiry given
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "MCP authorisation"
        constraints = [models.UniqueConstraint(fields=["server", "user_key"], name="unique_mcp_token")]

    def __str__(self) -> str:
        return f"{self.server.name} · {self.user_key or '(project)'}"


class McpAuthorization(models.Model):
    """An authorisation flow under way: what the callback needs to finish it, found by its `state`.
    Taken (deleted) by the callback; one older than MCP_OAUTH_FLOW_SECONDS is refused."""

    state = models.CharField(max_length=100, unique=True)
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="authorizations")
    user_key = models.CharField(max_length=STORED_MAX_LENGTH, blank=True, default="")
    flow = models.TextField()  # encrypted JSON: the PKCE verifier and the discovered metadata
    created_at = models.DateTimeField(auto_now_add=True)
