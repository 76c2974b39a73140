// Relative times for the thread list ("2 min ago"). Pure, so Node's test runner can check it.

const UNITS = [
  [60, "s", 1],
  [60 * 60, "min", 60],
  [24 * 60 * 60, "h", 60 * 60],
  [7 * 24 * 60 * 60, "d", 24 * 60 * 60],
];

export function relativeTime(when, now = Date.now()) {
  const then = when instanceof Date ? when.getTime() : new Date(when).getTime();
  if (!Number.isFinite(then)) return "";
  const seconds = Math.round((now - then) / 1000);
  // A clock a little ahead of this one still means "now".
  if (seconds < 45) return "just now";
  for (const [limit, unit, size] of UNITS) {
    if (seconds < limit) return `${Math.max(1, Math.round(seconds / size))} ${unit} ago`;
  }
  return new Date(then).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}
