// Same-origin HTTP with the Django session: the CSRF token goes in a header on unsafe methods.
// No API key is ever used or stored by the page.

export class ApiError extends Error {
  constructor(status, body) {
    const detail = body?.detail || body?.error?.message || body?.title || `The server answered HTTP ${status}.`;
    super(detail);
    this.name = "ApiError";
    this.status = status;
    this.code = body?.code || body?.error?.code || null;
    this.body = body;
    // Rate limits and server-side failures are worth another try; a bad request is not.
    this.retryable = status === 429 || status >= 500 || status === 409;
  }
}

export function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (meta?.content) return meta.content;
  const cookie = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
  return cookie ? decodeURIComponent(cookie.slice("csrftoken=".length)) : "";
}

export async function request(method, path, { body, signal, accept = "application/json", headers: extra = {} } = {}) {
  const headers = { ...extra, Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (!["GET", "HEAD", "OPTIONS"].includes(method)) headers["X-CSRFToken"] = csrfToken();
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    credentials: "same-origin",
  });
  if (!response.ok) {
    let payload = null;
    try {
      payload = await response.json();
    } catch {
      payload = null;
    }
    if (response.status === 401) {
      // The session ended: go log in again, then come back.
      window.location.assign(`/login/?next=${encodeURIComponent(window.location.pathname)}`);
    }
    throw new ApiError(response.status, payload);
  }
  return response;
}

export async function requestJson(method, path, options) {
  const response = await request(method, path, options);
  return response.status === 204 ? null : response.json();
}
