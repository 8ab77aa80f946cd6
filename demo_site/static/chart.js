// The attempt's timeline as a small SVG chart: transport chunks, completed SSE events, provisional
// characters and committed characters, each as a cumulative line over time, scaled to its own final
// value (0-100 %). Committed output stays at zero until the attempt completes, then jumps: that is
// the point the chart makes. Series differ by dash pattern and by their text legend, not colour alone.
//
// Points are kept in bounded arrays (every other point is dropped when one fills up), and the SVG is
// redrawn at most once per animation frame (never while hidden), so a long stream costs the same per frame as a
// short one.

const SVG_NS = "http://www.w3.org/2000/svg";
const WIDTH = 480;
const HEIGHT = 150;
const PAD = { left: 34, right: 8, top: 8, bottom: 22 };
const MAX_POINTS = 512;

export const SERIES = [
  { key: "chunks", label: "transport chunks" },
  { key: "events", label: "complete SSE events" },
  { key: "provisional", label: "provisional chars" },
  { key: "committed", label: "committed chars" },
];

function svg(name, attributes = {}, parent = null) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (parent) parent.appendChild(element);
  return element;
}

export class TimelineChart {
  /** @param {HTMLElement} host where the SVG goes; @param {HTMLElement} legend where the legend goes */
  constructor(host, legend) {
    this.root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", class: "timeline-svg" }, null);
    const title = svg("title", {}, this.root);
    title.textContent = "Timeline of the attempt: chunks, events, provisional and committed output";
    svg("rect", { x: PAD.left, y: PAD.top, width: WIDTH - PAD.left - PAD.right,
                  height: HEIGHT - PAD.top - PAD.bottom, class: "plot-area" }, this.root);
    for (const [y, text] of [[PAD.top, "100%"], [HEIGHT - PAD.bottom, "0"]]) {
      const label = svg("text", { x: PAD.left - 4, y: y + 4, class: "axis-label", "text-anchor": "end" }, this.root);
      label.textContent = text;
    }
    this.xLabel = svg("text", { x: WIDTH - PAD.right, y: HEIGHT - 6, class: "axis-label", "text-anchor": "end" },
                      this.root);
    svg("text", { x: PAD.left, y: HEIGHT - 6, class: "axis-label" }, this.root).textContent = "0 ms";
    this.lines = new Map(SERIES.map(({ key }) => [key, svg("polyline", { class: `series series-${key}` }, this.root)]));
    host.replaceChildren(this.root);
    this.legendItems = new Map();
    legend.replaceChildren();
    for (const { key, label } of SERIES) {
      const item = document.createElement("li");
      item.className = `legend-${key}`;
      const swatch = svg("svg", { viewBox: "0 0 24 8", class: "swatch" }, item);
      svg("line", { x1: 0, y1: 4, x2: 24, y2: 4, class: `series series-${key}` }, swatch);
      const text = document.createElement("span");
      item.appendChild(text);
      legend.appendChild(item);
      this.legendItems.set(key, { label, text });
    }
    this.reset();
  }

  reset() {
    this.points = new Map(SERIES.map(({ key }) => [key, [[0, 0]]]));
    this.last = new Map(SERIES.map(({ key }) => [key, 0]));
    this.tMax = 0;
    this.dirty = true;
    this._schedule();
  }

  /** Record that series `key` stood at `value` at `tMs` milliseconds into the attempt. */
  add(key, tMs, value) {
    const points = this.points.get(key);
    points.push([tMs, value]);
    if (points.length > MAX_POINTS) {
      const kept = points.filter((_, i) => i % 2 === 0 || i === points.length - 1);
      this.points.set(key, kept);
    }
    this.last.set(key, value);
    if (tMs > this.tMax) this.tMax = tMs;
    this._schedule();
  }

  /** While hidden the chart only records its points; shown, it draws them (at most once per frame). */
  set visible(visible) {
    this.hidden = !visible;
    if (visible) this._schedule();
  }

  _schedule() {
    this.dirty = true;
    if (!this.frame && !this.hidden) this.frame = requestAnimationFrame(() => { this.frame = 0; this._draw(); });
  }

  _draw() {
    if (!this.dirty) return;
    this.dirty = false;
    const tMax = Math.max(this.tMax, 1);
    const plotW = WIDTH - PAD.left - PAD.right;
    const plotH = HEIGHT - PAD.top - PAD.bottom;
    for (const { key, label } of SERIES) {
      const points = this.points.get(key);
      const yMax = Math.max(...points.map(([, v]) => v), 1);
      const coords = [];
      let previous = 0;
      for (const [t, v] of points) {
        const x = PAD.left + (t / tMax) * plotW;
        // Steps: hold the previous value until this point's time, then jump.
        coords.push(`${x.toFixed(1)},${(PAD.top + plotH - (previous / yMax) * plotH).toFixed(1)}`);
        coords.push(`${x.toFixed(1)},${(PAD.top + plotH - (v / yMax) * plotH).toFixed(1)}`);
        previous = v;
      }
      coords.push(`${(PAD.left + plotW).toFixed(1)},${(PAD.top + plotH - (previous / yMax) * plotH).toFixed(1)}`);
      this.lines.get(key).setAttribute("points", coords.join(" "));
      this.legendItems.get(key).text.textContent = `${label}: ${this.last.get(key).toLocaleString("en-US")}`;
    }
    this.xLabel.textContent = `${Math.round(this.tMax).toLocaleString("en-US")} ms`;
  }
}
