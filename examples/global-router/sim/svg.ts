// A minimal SVG bar chart: panels of labelled horizontal bars sharing one row layout. Written by
// hand because the report needs nothing more, and every plotting library on the registry wants a
// DOM or ships as ESM only.

export interface Bar {
  value: number;
  /** Shown after the bar. */
  text: string;
  color?: string;
}

export interface Panel {
  title: string;
  /** The x axis starts at 0 and ends at max (or the largest value). */
  max?: number;
  /** Logarithmic axis from 1 (for latencies whose tail dwarfs the median). */
  log?: boolean;
  /** One entry per row; rows may hold several bars (drawn as thinner bars one under the other). */
  rows: Bar[][];
}

const ROW_HEIGHT = 30;
const LABEL_WIDTH = 270;
const PANEL_WIDTH = 260;
const PANEL_GAP = 40;
const TOP = 48;
const FONT = 'font-family="Helvetica, Arial, sans-serif"';

export function barChart(title: string, labels: string[], panels: Panel[], footnote = ''): string {
  const width = LABEL_WIDTH + panels.length * (PANEL_WIDTH + PANEL_GAP);
  const height = TOP + labels.length * ROW_HEIGHT + 40;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" ${FONT} font-size="15" font-weight="bold">${escape(title)}</text>`,
  ];
  labels.forEach((label, i) => {
    const y = TOP + i * ROW_HEIGHT + ROW_HEIGHT / 2 + 4;
    out.push(`<text x="${LABEL_WIDTH - 8}" y="${y}" ${FONT} font-size="12" text-anchor="end">${escape(label)}</text>`);
  });
  panels.forEach((panel, p) => {
    const x0 = LABEL_WIDTH + p * (PANEL_WIDTH + PANEL_GAP);
    const scale = (v: number) => (panel.log ? Math.log10(Math.max(1, v)) : v);
    const max = scale(panel.max ?? Math.max(...panel.rows.flat().map((b) => b.value).filter(Number.isFinite), 1e-9)) || 1;
    const plotWidth = PANEL_WIDTH - 70; // room for the value text
    out.push(`<text x="${x0}" y="${TOP - 10}" ${FONT} font-size="12" font-weight="bold">${escape(panel.title)}</text>`);
    out.push(`<line x1="${x0}" y1="${TOP}" x2="${x0}" y2="${TOP + labels.length * ROW_HEIGHT}" stroke="#888"/>`);
    panel.rows.forEach((bars, i) => {
      const thickness = (ROW_HEIGHT - 10) / Math.max(1, bars.length);
      bars.forEach((bar, j) => {
        const value = Number.isFinite(bar.value) ? Math.max(0, scale(bar.value)) : 0;
        const w = Math.min(plotWidth, (value / max) * plotWidth);
        const y = TOP + i * ROW_HEIGHT + 5 + j * thickness;
        out.push(`<rect x="${x0}" y="${y.toFixed(1)}" width="${w.toFixed(1)}" height="${(thickness - 1).toFixed(1)}" fill="${bar.color ?? '#4878a8'}"/>`);
        out.push(`<text x="${(x0 + w + 4).toFixed(1)}" y="${(y + thickness / 2 + 3).toFixed(1)}" ${FONT} font-size="10">${escape(bar.text)}</text>`);
      });
    });
  });
  if (footnote) out.push(`<text x="10" y="${height - 12}" ${FONT} font-size="10" fill="#555">${escape(footnote)}</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
