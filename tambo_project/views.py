from django.db import connection
from django.http import JsonResponse


def healthz(request):
    """For load balancers and the compose healthcheck: 200 when the database answers."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:  # noqa: BLE001 - any database failure means unhealthy
        return JsonResponse({"status": "unhealthy", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok", "database": connection.vendor})
