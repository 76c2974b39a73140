"""Charts drawn on the server as SVG (no JavaScript, no build step): stacked bars per day and lines
per day. Every number is escaped into the markup by format_html; each bar and point carries a
<title> with its value, which browsers show on hover and screen readers read."""
from __future__ import annotations

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 14, 64
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 4, 8, 10):  # a quarter of each is a round tick
        if value <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def _fmt(value: float, unit: str = "") -> str:
    if unit == "%":
        return f"{value:.0f}%"
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M{unit}"
    if value >= 10_000:
        return f"{value / 1000:.0f}k{unit}"
    return f"{value:.0f}{unit}" if value == int(value) else f"{value:.1f}{unit}"


def _frame(days: list[str], top: float, unit: str, label: str) -> list[SafeString]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = []
    for i in range(5):
        value = top * i / 4
        y = TOP + plot_h - plot_h * i / 4
        parts.append(format_html('<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#e0e0e0"/>'
                                 '<text x="{}" y="{}" font-size="11" text-anchor="end" fill="#555">{}</text>',
                                 LEFT, WIDTH - RIGHT, y, y, LEFT - 6, y + 4, _fmt(value, unit)))
    step = max(1, len(days) // 10)
    slot = plot_w / max(1, len(days))
    for index, day in enumerate(days):
        if index % step == 0:
            x = LEFT + slot * (index + 0.5)
            parts.append(format_html('<text x="{}" y="{}" font-size="11" text-anchor="end" fill="#555" '
                                     'transform="rotate(-40 {} {})">{}</text>', x, HEIGHT - BOTTOM + 14, x,
                                     HEIGHT - BOTTOM + 14, day[5:]))
    parts.append(format_html('<text x="12" y="{}" font-size="11" fill="#555" transform="rotate(-90 12 {})" '
                             'text-anchor="middle">{}</text>', TOP + plot_h / 2, TOP + plot_h / 2, label))
    return parts


def _svg(title: str, parts: list[SafeString], legend: list[tuple[str, str]]) -> SafeString:
    legend_html = format_html_join("", '<span style="display:inline-flex;align-items:center;gap:4px;'
                                   'margin-right:12px;font-size:12px"><span style="width:10px;height:10px;'
                                   'background:{};display:inline-block"></span>{}</span>', legend)
    return format_html('<svg viewBox="0 0 {} {}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">'
                       '{}</svg><div class="tambo-legend">{}</div>', WIDTH, HEIGHT, title,
                       mark_safe("".join(parts)), legend_html)


def stacked_bars(title: str, days: list[str], series: dict[str, list[float]], *, unit: str = "",
                 label: str = "") -> SafeString:
    """One bar per day, stacked by series (e.g. project · model)."""
    totals = [sum(values[i] for values in series.values()) for i in range(len(days))]
    top = _nice_max(max(totals, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(1, len(days))
    parts = _frame(days, top, unit, label)
    legend = []
    base = [0.0] * len(days)
    for color_index, (name, values) in enumerate(series.items()):
        color = PALETTE[color_index % len(PALETTE)]
        legend.append((color, name))
        for i, value in enumerate(values):
            if not value:
                continue
            height = plot_h * value / top
            y = TOP + plot_h - plot_h * base[i] / top - height
            parts.append(format_html('<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{} {}: {}</title></rect>',
                                     round(LEFT + slot * i + slot * 0.15, 1), round(y, 1), round(slot * 0.7, 1),
                                     round(height, 1), color, days[i], name, _fmt(value, unit)))
            base[i] += value
    return _svg(title, parts, legend)


def lines(title: str, days: list[str], series: dict[str, list[float | None]], *, unit: str = "",
          label: str = "", top: float | None = None) -> SafeString:
    """One line per series over the days; a day without a value leaves a gap."""
    values = [v for vs in series.values() for v in vs if v is not None]
    top = top or _nice_max(max(values, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(1, len(days))
    parts = _frame(days, top, unit, label)
    legend = []
    for color_index, (name, points) in enumerate(series.items()):
        color = PALETTE[color_index % len(PALETTE)]
        legend.append((color, name))
        segment: list[str] = []
        for i, value in enumerate(points + [None]):
            if value is not None:
                x, y = LEFT + slot * (i + 0.5), TOP + plot_h - plot_h * min(value, top) / top
                segment.append(f"{x:.1f},{y:.1f}")
                parts.append(format_html('<circle cx="{}" cy="{}" r="3" fill="{}"><title>{} {}: {}</title></circle>',
                                         round(x, 1), round(y, 1), color, days[i], name, _fmt(value, unit)))
            elif segment:
                parts.append(format_html('<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>',
                                         " ".join(segment), color))
                segment = []
    return _svg(title, parts, legend)
