// Appending streamed text to the DOM at a cost that does not grow with what is already shown.
//
// Text goes into a run of block-level segments (<span class="seg">), each holding one Text node that
// grows with appendData. A segment is sealed once it holds about SEGMENT_CHARS characters, preferably
// right after a newline (the break is then invisible) or else after a space; a new segment starts
// after it. So an append touches only the last, bounded segment: the string copy inside appendData and
// the browser's re-layout of that segment's lines stay the same size at the end of a 1 MB answer as at
// its start, and sealed segments off screen are skipped by `content-visibility: auto` (style.css).
//
// Everything is inserted as text (Text nodes), never parsed as HTML.

const SEGMENT_CHARS = 2048;
// A segment with no newline or space to break after is sealed anyway at this size.
const HARD_SEGMENT_CHARS = 8192;

export class TextSink {
  /** @param {HTMLElement} container the element the segments are appended to */
  constructor(container) {
    this.container = container;
    this.node = null;   // the Text node of the open segment
    this.open = 0;      // characters in the open segment
    this.length = 0;    // characters appended in total
  }

  /** Append `text` (a string from the model: shown as text, never as markup). */
  append(text) {
    if (!text) return;
    this.length += text.length;
    while (text) {
      if (this.node === null) this._startSegment();
      const cut = this._cut(text);
      this.node.appendData(cut < 0 ? text : text.slice(0, cut));
      this.open += cut < 0 ? text.length : cut;
      if (cut < 0) return;
      this.node = null;  // sealed
      text = text.slice(cut);
    }
  }

  /** Remove everything shown. */
  clear() {
    this.container.replaceChildren();
    this.node = null;
    this.open = 0;
    this.length = 0;
  }

  _startSegment() {
    const segment = document.createElement("span");
    segment.className = "seg";
    this.node = document.createTextNode("");
    segment.appendChild(this.node);
    this.container.appendChild(segment);
    this.open = 0;
  }

  /** Where to seal the open segment inside `text` (index just after the break), or -1 to keep it open:
   *  the first newline, else the first space, once the segment has SEGMENT_CHARS characters, and at the
   *  latest HARD_SEGMENT_CHARS (never between the two halves of a surrogate pair). */
  _cut(text) {
    const room = SEGMENT_CHARS - this.open;
    if (text.length < room) return -1;
    const from = Math.max(0, room - 1);
    const hardRoom = HARD_SEGMENT_CHARS - this.open;
    for (const breakChar of ["\n", " "]) {
      const at = text.indexOf(breakChar, from);
      if (at >= 0 && at < hardRoom) return at + 1;
    }
    if (text.length < hardRoom) return -1;
    const code = text.charCodeAt(hardRoom - 1);
    return code >= 0xd800 && code <= 0xdbff && hardRoom > 1 ? hardRoom - 1 : hardRoom;
  }
}
