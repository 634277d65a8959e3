// A minimal SVG line chart: panels sharing an x axis (offered load), one line per series with 95 %
// confidence whiskers. Written by hand because the report needs nothing more, and every plotting
// library on the registry wants a DOM or ships as ESM only.

export interface Point {
  x: number;
  y: number;
  /** Half-width of the confidence interval (NaN: none drawn). */
  ci: number;
}

export interface Series {
  name: string;
  color: string;
  points: Point[];
  /** Drawn thicker (the policy under evaluation). */
  bold?: boolean;
}

export interface LinePanel {
  title: string;
  /** Logarithmic y axis (latencies whose tail dwarfs the median). */
  log?: boolean;
  /** Differences: the y axis extends below zero as far as the intervals do, and zero is drawn. */
  signed?: boolean;
  /** Format of the y tick labels. */
  format: (y: number) => string;
  series: Series[];
}

const W = 360;
const H = 240;
const PAD = { left: 56, right: 12, top: 28, bottom: 36 };
const FONT = 'font-family="Helvetica, Arial, sans-serif"';

export function lineChart(title: string, subtitle: string, panels: LinePanel[], xLabel: string): string {
  const legendRows = Math.ceil((panels[0]?.series.length ?? 0) / 4);
  const width = panels.length * W;
  const height = 50 + H + 20 + legendRows * 18 + 10;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" ${FONT} font-size="15" font-weight="bold">${escape(title)}</text>`,
    `<text x="10" y="38" ${FONT} font-size="11" fill="#555">${escape(subtitle)}</text>`,
  ];
  panels.forEach((panel, i) => out.push(...drawPanel(panel, i * W, 50, xLabel)));
  (panels[0]?.series ?? []).forEach((s, i) => {
    const x = 10 + (i % 4) * 200;
    const y = 50 + H + 22 + Math.floor(i / 4) * 18;
    out.push(`<line x1="${x}" y1="${y - 4}" x2="${x + 24}" y2="${y - 4}" stroke="${s.color}" stroke-width="${s.bold ? 3 : 1.5}"/>`);
    out.push(`<text x="${x + 30}" y="${y}" ${FONT} font-size="12">${escape(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function drawPanel(panel: LinePanel, x0: number, y0: number, xLabel: string): string[] {
  const pts = panel.series.flatMap((s) => s.points).filter((p) => Number.isFinite(p.y));
  const xs = pts.map((p) => p.x);
  const [xmin, xmax] = [Math.min(...xs), Math.max(...xs)];
  const lo = (p: Point) => p.y - (Number.isFinite(p.ci) ? p.ci : 0);
  const hi = (p: Point) => p.y + (Number.isFinite(p.ci) ? p.ci : 0);
  const f = (y: number) => (panel.log ? Math.log10(Math.max(y, 1e-9)) : y);
  let ymin = panel.log ? Math.min(...pts.map((p) => f(Math.max(lo(p), 1)))) : panel.signed ? Math.min(0, ...pts.map(lo)) : 0;
  let ymax = Math.max(...pts.map((p) => f(hi(p))));
  if (!(ymax > ymin)) [ymin, ymax] = [ymin, ymin + 1];
  const px = (x: number) => x0 + PAD.left + ((x - xmin) / (xmax - xmin || 1)) * (W - PAD.left - PAD.right);
  const py = (y: number) => y0 + H - PAD.bottom - ((f(y) - ymin) / (ymax - ymin)) * (H - PAD.top - PAD.bottom);
  const out = [
    `<text x="${x0 + PAD.left}" y="${y0 + 16}" ${FONT} font-size="12" font-weight="bold">${escape(panel.title)}</text>`,
    `<line x1="${x0 + PAD.left}" y1="${y0 + H - PAD.bottom}" x2="${x0 + W - PAD.right}" y2="${y0 + H - PAD.bottom}" stroke="#888"/>`,
    `<line x1="${x0 + PAD.left}" y1="${y0 + PAD.top}" x2="${x0 + PAD.left}" y2="${y0 + H - PAD.bottom}" stroke="#888"/>`,
    `<text x="${x0 + (W + PAD.left) / 2}" y="${y0 + H - 6}" ${FONT} font-size="11" text-anchor="middle">${escape(xLabel)}</text>`,
  ];
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(`<text x="${px(x).toFixed(1)}" y="${y0 + H - PAD.bottom + 14}" ${FONT} font-size="10" text-anchor="middle">${Math.round(x * 100)} %</text>`);
  }
  for (let k = 0; k <= 4; k++) {
    const v = ymin + ((ymax - ymin) * k) / 4;
    const y = panel.log ? 10 ** v : v;
    const yy = py(y);
    out.push(`<line x1="${x0 + PAD.left - 3}" y1="${yy.toFixed(1)}" x2="${x0 + W - PAD.right}" y2="${yy.toFixed(1)}" stroke="#eee"/>`);
    out.push(`<text x="${x0 + PAD.left - 5}" y="${(yy + 3).toFixed(1)}" ${FONT} font-size="10" text-anchor="end">${escape(panel.format(y))}</text>`);
  }
  // A panel of differences crosses zero: draw it.
  if (panel.signed) out.push(`<line x1="${x0 + PAD.left}" y1="${py(0).toFixed(1)}" x2="${x0 + W - PAD.right}" y2="${py(0).toFixed(1)}" stroke="#444" stroke-dasharray="4 3"/>`);
  for (const s of panel.series) {
    const ok = s.points.filter((p) => Number.isFinite(p.y)).sort((a, b) => a.x - b.x);
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="${s.bold ? 3 : 1.5}" points="${ok.map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ')}"/>`);
    for (const p of ok) {
      if (Number.isFinite(p.ci) && p.ci > 0) {
        const [a, b] = [py(Math.max(lo(p), panel.log ? 1 : panel.signed ? -Infinity : 0)), py(hi(p))];
        out.push(`<line x1="${px(p.x).toFixed(1)}" y1="${a.toFixed(1)}" x2="${px(p.x).toFixed(1)}" y2="${b.toFixed(1)}" stroke="${s.color}" stroke-width="1"/>`);
      }
      out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="${s.bold ? 3 : 2}" fill="${s.color}"/>`);
    }
  }
  return out;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
