import { html } from "hono/html";
import type { Html } from "./layout.js";

/**
 * Charts drawn on the server as inline SVG: a sparkline per function and one bar chart per page
 * need no chart library (and no script) — a few hundred bytes each, readable without JavaScript.
 */
export function sparkline(values: number[], label: string): Html {
  const w = 84;
  const h = 22;
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? w / (values.length - 1) : w;
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(h - 2 - (v / max) * (h - 4)).toFixed(1)}`).join(" ");
  return html`<svg width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${label}"><title>${label}</title><polyline fill="none" stroke="#0b57d0" stroke-width="2" points="${points}"/></svg>`;
}

/** Vertical bars, one per day, with the day's count as each bar's title. */
export function barChart(days: { day: string; count: number }[], label: string): Html {
  const barW = 14;
  const gap = 4;
  const h = 120;
  const w = days.length * (barW + gap);
  const max = Math.max(1, ...days.map((d) => d.count));
  return html`<svg width="100%" viewBox="0 0 ${w} ${h + 20}" role="img" aria-label="${label}" preserveAspectRatio="xMinYMin meet" style="max-width:${w * 1.5}px">
<title>${label}</title>
${days.map((d, i) => {
  const bh = Math.round((d.count / max) * h);
  return html`<rect x="${i * (barW + gap)}" y="${h - bh}" width="${barW}" height="${Math.max(bh, 1)}" fill="${d.count ? "#0b57d0" : "#c7d0db"}"><title>${d.day}: ${d.count}</title></rect>`;
})}
<text x="0" y="${h + 15}">${days[0]?.day ?? ""}</text><text x="${w}" y="${h + 15}" text-anchor="end">${days.at(-1)?.day ?? ""}</text>
</svg>`;
}
