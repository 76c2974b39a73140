from django.contrib import admin

from tools.models import McpServer, ProjectTool


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "transport", "enabled")
    list_filter = ("transport", "enabled", "project")
    search_fields = ("name",)


@admin.register(ProjectTool)
class ProjectToolAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "enabled")
    list_filter = ("enabled", "project")
