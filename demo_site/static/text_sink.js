// Appending streamed text to the DOM at a cost that does not grow with what is already shown, and without a
// single line break the model did not send.
//
// The DOM: the container (white-space: pre-wrap) holds a run of segments, <span class="seg"> with
// `display: inline-block; width: 100%` (style.css). Each segment holds Text nodes of at most NODE_CHARS characters
// that grow with appendData, so an append copies a bounded string. A segment is an independent formatting
// context: the browser lays out only the open (last) segment when text arrives and keeps the layout of the sealed
// ones (a single 1 MB inline paragraph costs ~300 ms of layout per frame in Chromium; these segments keep it flat).
//
// Why the segments show no break: a segment is sealed only at the start of its last rendered line, i.e. exactly
// where the browser wrapped the line anyway (or right after a newline the model sent), so the text after the seam
// starts a new line at the same place it would have in one long paragraph. Line breaking is greedy, so the lines
// before a seam do not depend on the text after it. When the container's width changes the seams no longer fall
// on line ends: `reflow` moves each seam back to a line start (a few segments per frame, in order).
//
// Why the text is exact: inline-blocks add nothing to innerText or to a copied selection (block boxes would each
// add a newline), and the Text nodes hold exactly the characters appended, in order. Everything is inserted as
// text, never parsed as HTML.

/** appendData copies the node's whole string: a node takes appends up to this size, then a new node starts. */
const NODE_CHARS = 1024;
/** Once the open segment holds this many characters, its complete lines are sealed at the next frame. */
const SEGMENT_CHARS = 4096;
/** Reflow work per frame (ms) after a width change; the rest waits for the next frame. */
const REFLOW_BUDGET_MS = 8;

const graphemes = typeof Intl !== "undefined" && Intl.Segmenter ? new Intl.Segmenter(undefined, { granularity: "grapheme" })
  : null;

// --- one frame loop for every sink --------------------------------------------------------------------------------

const pendingSeal = new Set();
const pendingReflow = new Set();
let frame = 0;

function schedule() {
  if (!frame) frame = requestAnimationFrame(runFrame);
}

function runFrame() {
  frame = 0;
  for (const sink of pendingSeal) sink._sealOpen();
  pendingSeal.clear();
  const deadline = performance.now() + REFLOW_BUDGET_MS;
  for (const sink of pendingReflow) {
    if (sink._reflowStep(deadline)) pendingReflow.delete(sink);
    if (performance.now() > deadline) break;
  }
  if (pendingReflow.size) schedule();
}

// A width change moves line ends: every sink whose container changed width re-aligns its seams.
const resizes = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
  for (const entry of entries) {
    const sink = entry.target.__textSink;
    if (sink) sink._widthChanged(entry.contentRect.width);
  }
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

/** The offset where the last rendered line of `segment` starts (the line holding its last character), or -1 when
 *  it cannot be measured (not rendered). 0 means the segment is one line. */
function lastLineStart(segment) {
  const pos = positions(segment);
  if (pos.length === 0) return -1;
  let lastTop = null;
  for (let o = pos.length - 1; o >= 0 && o > pos.length - 64; o--) {
    const [node, at] = locate(pos, o);
    range.setStart(node, at);
    range.setEnd(node, at + 1);
    const rect = range.getBoundingClientRect();
    if (rect.height > 0) {
      lastTop = rect.top;
      break;
    }
  }
  if (lastTop === null) return -1;
  // The first character whose line is the last line: characters of earlier lines have their middles above the
  // top of the last line's glyphs (line-height > 1 keeps lines apart).
  let lo = 0;
  let hi = pos.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const middle = lineMiddle(pos, mid);
    if (middle !== null && middle > lastTop) hi = mid;
    else lo = mid + 1;
  }
  return graphemeStart(pos, lo);
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
  /** @param {HTMLElement} container the element (white-space: pre-wrap) the segments go into */
  constructor(container) {
    this.length = 0;    // characters appended in total
    this.width = null;  // the container width the seams were placed at (null: none placed yet)
    this._attach(container);
    this._reset();
  }

  /** Append `text` (a string from the model: shown as text, never as markup). */
  append(text) {
    if (!text) return;
    this.length += text.length;
    while (text) {
      if (this.node === null || this.node.length >= NODE_CHARS) this._newNode();
      const room = NODE_CHARS - this.node.length;
      let piece = text.length <= room ? text : text.slice(0, room);
      // Keep a surrogate pair in one node (a node boundary is invisible, but keep the nodes well-formed).
      const last = piece.charCodeAt(piece.length - 1);
      if (piece.length < text.length && last >= 0xd800 && last <= 0xdbff && piece.length > 1) piece = piece.slice(0, -1);
      this.node.appendData(piece);
      this.openChars += piece.length;
      text = text.slice(piece.length);
    }
    if (this.openChars >= SEGMENT_CHARS) {
      pendingSeal.add(this);
      schedule();
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

  /** Move what is shown, unchanged, into `container` (which the sink then writes to). No text is re-laid out
   *  unless the new container is narrower or wider (then the seams are realigned). */
  moveTo(container) {
    if (container === this.container) return;
    container.replaceChildren(...this.container.childNodes);
    this.container.__textSink = null;
    resizes?.unobserve(this.container);
    this._attach(container);
  }

  _attach(container) {
    this.container = container;
    container.__textSink = this;
    resizes?.observe(container);
  }

  _reset() {
    this.open = null;   // the open segment
    this.node = null;   // its last Text node, which takes appends
    this.openChars = 0; // characters in the open segment
    this.reflowAt = null;
    pendingSeal.delete(this);
    pendingReflow.delete(this);
  }

  _newNode() {
    if (this.open === null) {
      this.open = newSegment();
      this.container.appendChild(this.open);
    }
    this.node = document.createTextNode("");
    this.open.appendChild(this.node);
  }

  /** Seal the open segment's complete lines into a segment of their own (called in a frame, before paint). */
  _sealOpen() {
    if (this.open === null || this.openChars < SEGMENT_CHARS || this.reflowAt !== null) return;
    const cut = lastLineStart(this.open);
    if (cut <= 0) return;  // one line, or not rendered (hidden): try again with the next append
    this.width ??= this.container.getBoundingClientRect().width;
    const tail = splitAt(this.open, cut);
    const rest = newSegment();
    rest.append(...tail);
    this.open.after(rest);
    this.open = rest;
    this.node = rest.lastChild;
    this.openChars = this.open.textContent.length;
  }

  _widthChanged(width) {
    if (width === 0 || this.width === null || Math.abs(width - this.width) < 0.5) return;
    this.width = width;
    if (this.container.childElementCount < 2) return;
    this.reflowAt = this.container.firstElementChild;
    pendingReflow.add(this);
    schedule();
  }

  /** Realign seams from `reflowAt` on, until `deadline`; true when every seam is at a line start again. */
  _reflowStep(deadline) {
    let segment = this.reflowAt;
    while (segment && segment !== this.open) {
      const next = segment.nextElementSibling;
      if (!next) break;
      if (!segment.textContent.endsWith("\n")) {  // a seam after a newline is one at any width
        const cut = lastLineStart(segment);
        if (cut < 0) break;
        const tail = splitAt(segment, cut);
        next.prepend(...tail);
        if (next !== this.open) next.normalize();
        if (cut === 0) segment.remove();
      }
      segment = next;
      if (performance.now() > deadline) {
        this.reflowAt = segment;
        return false;
      }
    }
    this.reflowAt = null;
    if (this.open) this.openChars = this.open.textContent.length;
    if (this.openChars >= SEGMENT_CHARS) pendingSeal.add(this);
    return true;
  }
}
