// Following the stream in a scrolling conversation, the way chat products do: while the reader is at the bottom,
// every frame that added content scrolls to the new bottom; once the reader scrolls up (wheel, touch, keys, the
// scroll bar) the view stays where they put it and a "Jump to latest" button appears; scrolling back to the bottom
// or pressing the button follows again. Nothing here ever scrolls up, so a commit never moves what the reader sees;
// a change of size (the window, the composer, the content's width) keeps a following reader at the bottom, and a
// reader who scrolled back keeps their place (the browser's scroll anchoring).

/** Within this many pixels of the bottom counts as "at the bottom". */
const NEAR_BOTTOM_PX = 24;

export class Follower {
  /**
   * @param {HTMLElement} scroller the scrolling conversation
   * @param {HTMLButtonElement} jump the "Jump to latest" button
   * @param {{beforeFrame?: () => void, onFrame?: (ms: number) => void}} hooks `beforeFrame` runs first in each
   *   follow frame (layout work of its own, such as text_sink.js's seams); `onFrame` is told how long the frame
   *   spent in it, in layout and in scrolling
   */
  constructor(scroller, jump, { beforeFrame = () => {}, onFrame = () => {} } = {}) {
    this.scroller = scroller;
    this.jump = jump;
    this.beforeFrame = beforeFrame;
    this.onFrame = onFrame;
    this._following = true;
    scroller.dataset.following = "true";
    this.frame = 0;
    this.ownScrollTop = null;   // where the last programmatic scroll put the view
    scroller.addEventListener("scroll", () => this._scrolled(), { passive: true });
    // Intent to read back: stop following at once, before the next frame can scroll down again.
    scroller.addEventListener("wheel", (event) => { if (event.deltaY < 0) this._leave(); }, { passive: true });
    scroller.addEventListener("touchmove", () => this._leave(), { passive: true });
    scroller.addEventListener("keydown", (event) => {
      if (["ArrowUp", "PageUp", "Home"].includes(event.key)) this._leave();
    });
    jump.addEventListener("click", () => this.toLatest());
    // A size change that is not the reader's doing (a rotated phone, the settings opening, the on-screen keyboard,
    // text re-wrapping at a new width) keeps a following reader at the bottom: scroll before the frame is painted,
    // so the scroll event the size change may cause is recognised as our own.
    if (typeof ResizeObserver !== "undefined") {
      const resized = new ResizeObserver(() => {
        if (this.following) this._scrollToEnd();
        else this._showJump();
      });
      resized.observe(scroller);
      if (scroller.firstElementChild) resized.observe(scroller.firstElementChild);
    }
  }

  /** Whether the view follows the newest content. Mirrored on the scroller as `data-following`: while following,
   *  the browser's scroll anchoring is off (style.css), since it would move the view on its own when text above
   *  re-wraps and that would read as the reader scrolling away; while reading back, anchoring keeps their place. */
  get following() {
    return this._following;
  }

  set following(value) {
    if (value === this._following) return;
    this._following = value;
    this.scroller.dataset.following = String(value);
  }

  /** Content changed: at the next frame, keep the newest content in view if the reader is following (else offer
   *  the jump). */
  changed() {
    this._schedule();
  }

  /** Follow again and show the newest content now (a new question, or the button). */
  toLatest() {
    this.following = true;
    this.jump.hidden = true;
    this.beforeFrame();
    this._scrollToEnd();
  }

  /** Ask for a follow frame without new content (frame work of others, see `beforeFrame`). */
  requestFrame() {
    this._schedule();
  }

  _schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const started = performance.now();
      this.beforeFrame();
      if (this.following) this._scrollToEnd();
      else this._showJump();
      this.onFrame(performance.now() - started);
    });
  }

  _scrollToEnd() {
    const el = this.scroller;
    // Reading scrollHeight lays out what changed since the last frame (timed as part of the frame's cost).
    el.scrollTop = el.scrollHeight;
    this.ownScrollTop = el.scrollTop;
  }

  _distanceToEnd() {
    const el = this.scroller;
    return el.scrollHeight - el.scrollTop - el.clientHeight;
  }

  _leave() {
    this.following = false;
    this.ownScrollTop = null;
  }

  _scrolled() {
    const el = this.scroller;
    if (this.ownScrollTop !== null && Math.abs(el.scrollTop - this.ownScrollTop) < 2) return;  // our own scroll
    this.ownScrollTop = null;
    this.following = this._distanceToEnd() < NEAR_BOTTOM_PX;
    if (this.following) this.jump.hidden = true;
    else this._showJump();
  }

  _showJump() {
    this.jump.hidden = this._distanceToEnd() < NEAR_BOTTOM_PX;
  }
}
