// Appending streamed text to the DOM at a cost that does not grow with what is already shown, and without a
// single line break the model did not send.
//
// The DOM: the container (white-space: pre-wrap) holds a run of segments, <span class="seg"> with
// `display: inline-block; width: 100%` (style.css). Each segment holds Text nodes of at most NODE_CHARS characters
// that grow with appendData, so an append copies a bounded string. Appends go to the last ("open") segment; once
// it holds SEGMENT_CHARS characters, the next frame cuts it into segments of about that size. A segment is an
// independent formatting context, so the browser lays out only the segments that changed and keeps the layout of
// the others (one 1 MB inline paragraph costs ~300 ms of layout per frame in Chromium; these segments keep a
// frame's layout proportional to what arrived since the last one).
//
// Why the seams show no break: a seam is only ever made in a frame, before paint, at the start of a rendered line
// of the open segment, i.e. exactly where the browser wrapped the line anyway; the text after it moves to a new
// segment and starts a line there too. Line breaking is greedy, so the lines before a cut do not depend on the
// text after it, and every cut of a frame is measured on the same layout before any is made: however much text
// arrived since the last frame (a burst, a tab that was hidden), no seam is painted out of place. When the
// container's width changes the seams no longer fall on line ends: each is moved to the start of the last
// rendered line of the segment before it (that line's text moves to the front of the next segment), a few
// segments per frame; a seam right after a newline the model sent needs no move.
//
// Why the text is exact: inline-blocks add nothing to innerText or to a copied selection (block boxes would each
// add a newline), and the Text nodes hold exactly the characters appended, in order. Everything is inserted as
// text, never parsed as HTML.

/** appendData copies the node's whole string: a node takes appends up to this size, then a new node starts. */
const NODE_CHARS = 1024;
/** The open segment is cut into segments of about this size, at line starts, in the next frame. */
const SEGMENT_CHARS = 4096;
/** Seam alignment work per frame (ms); what is left waits for the next frame. */
const ALIGN_BUDGET_MS = 8;

const graphemes = typeof Intl !== "undefined" && Intl.Segmenter
  ? new Intl.Segmenter(undefined, { granularity: "grapheme" }) : null;

// --- one frame loop for every sink --------------------------------------------------------------------------------

/** Sinks with seams to align, in the order they asked. */
const pending = new Set();
let frame = 0;
/** Who asks for the frame that aligns seams: by default requestAnimationFrame; see setFrameScheduler. */
let requestFrame = () => {
  if (!frame) frame = requestAnimationFrame(alignSeams);
};

/** Let the page's own frame loop drive the alignment: `request()` must lead to one `alignSeams()` call early in the
 *  next animation frame (before the page reads layout). One loop per frame keeps the frame's layout in one place. */
export function setFrameScheduler(request) {
  requestFrame = request;
}

function schedule(sink) {
  pending.add(sink);
  requestFrame();
}

/** Align the seams waiting for a frame now (in a requestAnimationFrame callback, before the page reads layout for
 *  its own purposes: the caller then measures a settled layout). */
export function alignSeams() {
  if (frame) cancelAnimationFrame(frame);
  frame = 0;
  const deadline = performance.now() + ALIGN_BUDGET_MS;
  for (const sink of pending) {
    const state = sink._align(deadline);
    if (state !== "more") pending.delete(sink);
    if (performance.now() > deadline) break;
  }
  if (pending.size) requestFrame();
}

// A width change moves line ends: every sink whose container changed width realigns its seams.
const resizes = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
  for (const entry of entries) entry.target.__textSink?._widthChanged(entry.contentRect.width);
});

// --- measuring lines ----------------------------------------------------------------------------------------------

const range = typeof document === "undefined" ? null : document.createRange();

/** The vertical middle of character `offset` of `node`, or null where it has no box (a newline, a joiner). */
function middleOf(node, offset) {
  range.setStart(node, offset);
  range.setEnd(node, offset + 1);
  const rect = range.getBoundingClientRect();
  return rect.height > 0 ? rect.top + rect.height / 2 : null;
}

/** Text positions of a segment: its Text nodes and the global offset where each starts. */
function positions(segment) {
  const nodes = [];
  const starts = [];
  let length = 0;
  for (let node = segment.firstChild; node; node = node.nextSibling) {
    nodes.push(node);
    starts.push(length);
    length += node.length;
  }
  return { nodes, starts, length };
}

function locate(pos, offset) {
  let lo = 0;
  let hi = pos.nodes.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (pos.starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return [pos.nodes[lo], offset - pos.starts[lo]];
}

/** Where the character at `offset` sits vertically; a character without a box belongs to the line of the nearest
 *  character before it that has one (a newline ends the line it is on). Null when nothing before it has a box. */
function lineMiddle(pos, offset) {
  for (let o = offset; o >= 0 && o > offset - 64; o--) {
    const [node, at] = locate(pos, o);
    const middle = middleOf(node, at);
    if (middle !== null) return middle;
  }
  return null;
}

/** The offset where the rendered line holding character `offset` of a segment starts, or -1 when it cannot be
 *  measured (not rendered). Reads layout only: measuring several offsets costs one layout. */
function lineStart(pos, offset) {
  let top = null;
  for (let o = offset; o >= 0 && o > offset - 64; o--) {
    const [node, at] = locate(pos, o);
    range.setStart(node, at);
    range.setEnd(node, at + 1);
    const rect = range.getBoundingClientRect();
    if (rect.height > 0) {
      top = rect.top;
      break;
    }
  }
  if (top === null) return -1;
  // The first character on that line: characters of earlier lines have their middles above the top of its
  // glyphs (line-height > 1 keeps lines apart).
  let lo = 0;
  let hi = offset;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const middle = lineMiddle(pos, mid);
    if (middle !== null && middle > top) hi = mid;
    else lo = mid + 1;
  }
  return graphemeStart(pos, lo);
}

/** The offset where the last rendered line of `segment` starts, or -1 (see lineStart). */
function lastLineStart(segment) {
  const pos = positions(segment);
  return pos.length === 0 ? -1 : lineStart(pos, pos.length - 1);
}

/** `offset`, moved back to the start of the grapheme cluster it is in (a seam never splits a character). */
function graphemeStart(pos, offset) {
  if (offset === 0 || !graphemes) return offset;
  const from = Math.max(0, offset - 32);
  let window = "";
  for (let i = 0; i < pos.nodes.length; i++) {
    const start = pos.starts[i];
    const end = start + pos.nodes[i].length;
    if (end > from && start < offset + 32) window += pos.nodes[i].data.slice(Math.max(0, from - start), offset + 32 - start);
  }
  let best = 0;
  for (const { index } of graphemes.segment(window)) {
    if (from + index > offset) break;
    best = from + index;
  }
  return best;
}

/** Split `segment`'s text at `offset`: the nodes before it stay in `segment`, the rest are returned (in order). */
function splitAt(segment, offset) {
  const pos = positions(segment);
  const tail = [];
  let [node, at] = locate(pos, offset);
  if (at > 0) node = at < node.length ? node.splitText(at) : node.nextSibling;
  for (; node; node = node.nextSibling) tail.push(node);
  for (const moved of tail) moved.remove();
  return tail;
}

// --- the sink ---------------------------------------------------------------------------------------------------

function newSegment() {
  const segment = document.createElement("span");
  segment.className = "seg";
  return segment;
}

export class TextSink {
  /** @param {HTMLElement} container the element (white-space: pre-wrap, no padding) the segments go into */
  constructor(container) {
    this.container = container;
    container.__textSink = this;
    resizes?.observe(container);
    this.length = 0;        // characters appended in total
    this._reset();
  }

  /** Append `text` (a string from the model: shown as text, never as markup). */
  append(text) {
    if (!text) return;
    this.length += text.length;
    while (text) {
      if (this.node === null || this.node.length >= NODE_CHARS) this._newNode();
      let piece = text.slice(0, NODE_CHARS - this.node.length);
      // Keep a surrogate pair in one node (a node boundary is invisible, but keep the nodes well-formed).
      const last = piece.charCodeAt(piece.length - 1);
      if (piece.length < text.length && piece.length > 1 && last >= 0xd800 && last <= 0xdbff) piece = piece.slice(0, -1);
      this.node.appendData(piece);
      this.openChars += piece.length;
      text = text.slice(piece.length);
    }
  }

  /** Everything appended, exactly (read from the DOM: O(length)). */
  get text() {
    return this.container.textContent;
  }

  /** Remove everything shown. */
  clear() {
    this.container.replaceChildren();
    this.length = 0;
    this._reset();
  }

  _reset() {
    this.open = null;       // the segment that takes appends
    this.node = null;       // its last Text node
    this.openChars = 0;     // characters in it
    this.alignFrom = null;  // the first segment whose seam (with the next one) may not be at a line start
    this.width = null;      // the container width the seams were aligned at (null: not known)
    pending.delete(this);
  }

  _newNode() {
    // A full open segment is cut at line starts in the next frame (_split): never here, so no seam is ever shown
    // before it is at a line start, however much text arrives between two frames.
    if (this.open !== null && this.openChars >= SEGMENT_CHARS) schedule(this);
    if (this.open === null) {
      this.open = newSegment();
      this.openChars = 0;
      this.container.appendChild(this.open);
    }
    this.node = document.createTextNode("");
    this.open.appendChild(this.node);
  }

  _widthChanged(width) {
    if (width === 0 || (this.width !== null && Math.abs(width - this.width) < 0.5)) return;
    if (this.width !== null) this.alignFrom = this.container.firstElementChild;  // every seam moved
    this.width = width;
    if (this.alignFrom || this.openChars >= SEGMENT_CHARS) schedule(this);
  }

  /** Cut the open segment into segments of about SEGMENT_CHARS, each cut at the start of a rendered line. Every
   *  cut is measured first, on one layout (a cut at a line start leaves every line as it was, so the later
   *  measurements stay true), then all are made. The last piece stays open. False: not rendered. */
  _split() {
    const pos = positions(this.open);
    const cuts = [];
    for (let target = SEGMENT_CHARS; target < pos.length; target += SEGMENT_CHARS) {
      const cut = lineStart(pos, target);
      if (cut < 0) return false;
      if (cut > (cuts.at(-1) ?? 0)) cuts.push(cut);
    }
    let segment = this.open;
    let open = null;
    for (let i = cuts.length - 1; i >= 0; i--) {
      const piece = newSegment();
      piece.append(...splitAt(segment, cuts[i]));
      segment.after(piece);
      open ??= piece;
    }
    if (open !== null) {
      this.open = open;
      this.node = open.lastChild;
      this.openChars = pos.length - cuts.at(-1);
    }
    return true;
  }

  /** Align seams from `alignFrom` on until `deadline`: "done", "more" (time ran out) or "blocked" (the container
   *  is not rendered; a later size change brings it back). Runs in a frame, before paint. */
  _align(deadline) {
    let segment = this.alignFrom;
    while (segment?.nextElementSibling) {
      const next = segment.nextElementSibling;
      if (!segment.textContent.endsWith("\n")) {  // a seam after a newline is one at any width
        const cut = lastLineStart(segment);
        if (cut < 0) {
          this.alignFrom = segment;
          this.width = null;
          return "blocked";
        }
        next.prepend(...splitAt(segment, cut));
        if (next !== this.open) next.normalize();
        else this.openChars = next.textContent.length;
        if (cut === 0) segment.remove();
      }
      segment = next;
      if (performance.now() > deadline && segment.nextElementSibling) {
        this.alignFrom = segment;
        return "more";
      }
    }
    this.alignFrom = null;
    if (this.open !== null && this.openChars >= SEGMENT_CHARS && !this._split()) {
      this.width = null;
      return "blocked";
    }
    this.width = this.container.getBoundingClientRect().width;
    return "done";
  }
}
