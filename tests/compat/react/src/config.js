// Where the app finds the server and who its user is. A real app reads these from its build-time
// environment and its own login; this one takes them from the page's query string, so one bundle
// serves both identity modes: `?tamboUrl=…&apiKey=…&userKey=…` or `…&userToken=<the app's own JWT>`.
export function readConfig(search = window.location.search) {
  const params = new URLSearchParams(search);
  const config = {
    tamboUrl: params.get("tamboUrl") ?? "",
    apiKey: params.get("apiKey") ?? "",
    userKey: params.get("userKey") || undefined,
    userToken: params.get("userToken") || undefined,
  };
  const problems = [];
  if (!config.tamboUrl) problems.push("tamboUrl is missing");
  if (!config.apiKey) problems.push("apiKey is missing");
  if (!config.userKey === !config.userToken) problems.push("give exactly one of userKey and userToken");
  return { config, problems };
}
