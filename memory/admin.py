"""Admin: the memories of each project's users (docs/memory.md#the-admin). Search by text or user,
filter by project, category and whether forgotten; edit a memory's text, category and importance;
forget (soft-delete) the selected ones. Rows are never deleted here: forgetting a user
(DELETE /v1/users/{userKey}, retention/forget.py) deletes theirs."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from memory.models import Memory
from memory.services import MemoryRefused, memories_soft_delete, memory_edit, memory_edit_check


class ForgottenFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("live", "Live"), ("forgotten", "Forgotten")]

    def queryset(self, request, queryset):
        if self.value() == "live":
            return queryset.filter(deleted_at__isnull=True)
        if self.value() == "forgotten":
            return queryset.filter(deleted_at__isnull=False)
        return queryset


class MemoryForm(forms.ModelForm):
    class Meta:
        model = Memory
        fields = ("content", "category", "importance")
        widgets = {"content": forms.Textarea(attrs={"rows": 4, "cols": 80})}

    def clean(self):
        data = super().clean()
        try:
            # The service's own check, so the admin refuses what the other writers refuse.
            memory_edit_check(memory=self.instance, content=data.get("content") or "",
                              category=data.get("category") or "", importance=data.get("importance") or 0)
        except MemoryRefused as refused:
            raise forms.ValidationError(str(refused)) from None
        return data


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    form = MemoryForm
    list_display = ("content_short", "user_key", "project", "category", "importance", "source", "updated_at",
                    "deleted_at")
    list_filter = (ForgottenFilter, "project", "category", "source")
    search_fields = ("content", "user_key", "id")
    ordering = ("-updated_at", "-id")
    readonly_fields = ("id", "project", "user_key", "source", "thread_id", "created_at", "updated_at", "deleted_at")
    fields = ("id", "project", "user_key", "content", "category", "importance", "source", "thread_id",
              "created_at", "updated_at", "deleted_at")
    actions = ["forget_selected"]
    list_per_page = 50

    @admin.display(description="memory")
    def content_short(self, obj: Memory) -> str:
        return obj.content if len(obj.content) <= 100 else obj.content[:99] + "…"

    def has_add_permission(self, request):
        return False  # memories come from their users' conversations

    def has_delete_permission(self, request, obj=None):
        return False  # forgotten (soft-deleted) here; deleted with their user

    def get_actions(self, request):
        actions = super().get_actions(request)
        if not self.has_change_permission(request):
            actions.pop("forget_selected", None)
        return actions

    def save_model(self, request, obj, form, change):
        memory_edit(memory=obj, content=obj.content, category=obj.category, importance=obj.importance)

    @admin.action(description="Forget the selected memories (soft-delete)")
    def forget_selected(self, request, queryset):
        count = memories_soft_delete(queryset)
        self.message_user(request, f"{count} memor{'y' if count == 1 else 'ies'} forgotten.", messages.SUCCESS)
