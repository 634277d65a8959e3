// A dependency-free SVG of soak samples: one panel per series, time on the x axis.
export interface Series {
  label: string;
  unit: string;
  values: number[];
}

const WIDTH = 900;
const PANEL_HEIGHT = 160;
const MARGIN = { left: 70, right: 20, top: 24, bottom: 28 };

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function panel(series: Series, timesS: number[], index: number): string {
  const top = index * (PANEL_HEIGHT + MARGIN.top + MARGIN.bottom) + MARGIN.top;
  const w = WIDTH - MARGIN.left - MARGIN.right;
  const tMax = Math.max(1, timesS[timesS.length - 1] ?? 1);
  const vMax = Math.max(...series.values, 1e-9) * 1.1;
  const x = (t: number): number => MARGIN.left + (t / tMax) * w;
  const y = (v: number): number => top + PANEL_HEIGHT - (v / vMax) * PANEL_HEIGHT;
  const points = series.values.map((v, i) => `${x(timesS[i]).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const ticks = [0, 0.5, 1].map((f) => {
    const v = vMax * f;
    return `<text x="${MARGIN.left - 6}" y="${y(v) + 4}" text-anchor="end">${v.toPrecision(3)}</text><line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`;
  });
  return [
    `<text x="${MARGIN.left}" y="${top - 8}" font-weight="bold">${esc(`${series.label} (${series.unit})`)}</text>`,
    ...ticks,
    `<text x="${WIDTH - MARGIN.right}" y="${top + PANEL_HEIGHT + 18}" text-anchor="end">${tMax.toFixed(0)} s</text>`,
    `<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="${points}"/>`,
  ].join('\n');
}

export function plotSvg(timesS: number[], series: Series[]): string {
  const height = series.length * (PANEL_HEIGHT + MARGIN.top + MARGIN.bottom);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...series.map((s, i) => panel(s, timesS, i)),
    '</svg>',
    '',
  ].join('\n');
}
