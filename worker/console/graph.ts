import { html } from "hono/html";
import type { Html } from "./layout.js";

export interface GraphEdge {
  id: string;
  from: string;
  to: string;
  label: string;
}

/**
 * Trigger chains as a layered drawing: each function in the column of its longest path from a
 * function nothing triggers (cycles broken where they close), edges as arrows labelled with the
 * trigger's status and whether it passes the result on. Server-side SVG: chains are small (a
 * function has at most a handful of triggers), so a layout library and its script are not needed.
 */
export function triggerGraph(names: Map<string, string>, edges: GraphEdge[]): Html {
  const nodes = [...new Set(edges.flatMap((e) => [e.from, e.to]))];
  const layer = new Map<string, number>(nodes.map((n) => [n, 0]));
  // Longest-path layering, bounded by the node count so cycles end.
  for (let round = 0; round < nodes.length; round++) {
    let moved = false;
    for (const e of edges) {
      if (e.from === e.to) continue;
      const want = layer.get(e.from)! + 1;
      if (want > layer.get(e.to)! && want < nodes.length) {
        layer.set(e.to, want);
        moved = true;
      }
    }
    if (!moved) break;
  }
  const columns = new Map<number, string[]>();
  for (const n of nodes) columns.set(layer.get(n)!, [...(columns.get(layer.get(n)!) ?? []), n]);
  const W = 170, H = 44, GX = 90, GY = 40, PAD = 20;
  const pos = new Map<string, { x: number; y: number }>();
  for (const [col, ns] of columns) ns.forEach((n, row) => pos.set(n, { x: PAD + col * (W + GX), y: PAD + row * (H + GY) }));
  const width = PAD * 2 + Math.max(1, columns.size) * (W + GX);
  const height = PAD * 2 + Math.max(1, ...[...columns.values()].map((c) => c.length)) * (H + GY);
  const edge = (e: GraphEdge) => {
    const a = pos.get(e.from)!;
    const b = pos.get(e.to)!;
    if (e.from === e.to) {
      const x = a.x + W - 30, y = a.y;
      return html`<g class="edge" data-trigger="${e.id}"><path d="M ${x} ${y} c 30 -40 60 -10 30 ${H / 2}" fill="none" stroke="#4a5563" stroke-width="1.5" marker-end="url(#arrow)"/><text x="${x + 36}" y="${y - 14}">${e.label}</text></g>`;
    }
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    const back = x2 <= x1;
    const d = back ? `M ${a.x + W / 2} ${a.y + H} C ${a.x + W / 2} ${a.y + H + 40}, ${b.x + W / 2} ${b.y + H + 40}, ${b.x + W / 2} ${b.y + H}` : `M ${x1} ${y1} C ${x1 + GX / 2} ${y1}, ${x2 - GX / 2} ${y2}, ${x2} ${y2}`;
    const lx = back ? (a.x + b.x + W) / 2 : (x1 + x2) / 2;
    const ly = back ? Math.max(a.y, b.y) + H + 34 : (y1 + y2) / 2 - 6;
    return html`<g class="edge" data-trigger="${e.id}"><path d="${d}" fill="none" stroke="#4a5563" stroke-width="1.5" marker-end="url(#arrow)"/><text x="${lx}" y="${ly}" text-anchor="middle">${e.label}</text></g>`;
  };
  return html`<svg id="trigger-graph" width="100%" viewBox="0 0 ${width} ${height + 40}" style="max-width:${width}px;background:#fff;border:1px solid #d5dbe3;border-radius:8px" role="img" aria-label="Trigger chains: ${edges.length} trigger(s) between ${nodes.length} function(s); the table below lists them">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#4a5563"/></marker></defs>
${edges.map(edge)}
${nodes.map((n) => {
  const p = pos.get(n)!;
  const name = names.get(n) ?? n;
  return html`<a href="/console/functions/${n}"><g class="node" data-function="${n}"><rect x="${p.x}" y="${p.y}" width="${W}" height="${H}" rx="8" fill="#eef4ff" stroke="#0b57d0"/><text x="${p.x + W / 2}" y="${p.y + H / 2 + 4}" text-anchor="middle">${name.length > 22 ? name.slice(0, 21) + "…" : name}</text></g></a>`;
})}
</svg>`;
}
