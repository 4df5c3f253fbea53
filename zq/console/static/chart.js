// A small live chart of a queue's stats: free, claimed and delayed over
// the last minutes, drawn as SVG (no library, no inline style).

import { svg, h } from "./dom.js";

const SERIES = [["free", "Free"], ["claimed", "Claimed"], ["delayed", "Delayed"]];
const W = 1000, H = 150, PAD = 4;

export function drawChart(samples, windowSeconds) {
  const now = Date.now();
  const max = Math.max(1, ...samples.flatMap((s) => SERIES.map(([k]) => s[k] || 0)));
  const x = (t) => PAD + (W - 2 * PAD) * (1 - (now - t) / (windowSeconds * 1000));
  const y = (v) => H - PAD - (H - 2 * PAD) * (v / max);
  const lines = SERIES.map(([key]) => svg("polyline", {
    class: `line ${key}`, fill: "none",
    points: samples.map((s) => `${x(s.t).toFixed(1)},${y(s[key] || 0).toFixed(1)}`).join(" "),
  }));
  const last = samples[samples.length - 1] || {};
  // The newest value of each series as a dot: visible from the first sample on.
  const dots = samples.length ? SERIES.map(([key]) => svg("circle", {
    class: `dot ${key}`, cx: x(last.t).toFixed(1), cy: y(last[key] || 0).toFixed(1), r: 3,
  })) : [];
  const summary = SERIES.map(([k, label]) => `${label} ${last[k] ?? 0}`).join(", ");
  const figure = h("figure.chart", {},
    svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", preserveAspectRatio: "none",
      "aria-label": `Stats over the last ${windowSeconds / 60} minutes, now ${summary}` },
    svg("line", { class: "axis", x1: PAD, x2: W - PAD, y1: H - PAD, y2: H - PAD }), ...lines, ...dots),
    h("figcaption", {},
      h("span.muted", { text: samples.length < 2 ? "collecting samples (every 2 s) · "
        : `0 – ${max}, last ${windowSeconds / 60} min · ` }),
      SERIES.map(([k, label]) => h(`span.key.${k}`, { text: `${label} ${last[k] ?? 0}` }))));
  return figure;
}
