"""Per-project server-side tools: built-in Python tools switched on per project, and MCP servers."""
from django.core.validators import RegexValidator
from django.db import models


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

    class Meta:
        verbose_name = "MCP server"
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_mcp_server")]

    def __str__(self) -> str:
        return self.name
