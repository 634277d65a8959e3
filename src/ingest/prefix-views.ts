// Views of the first n elements of an array that ingest writes again and again (a rank's burst, the
// thread's receive arena): at low rates every wake-up hands on one small message, whose few lengths
// recur, and a new view per message (~100 bytes of garbage each) was most of what an ingest thread
// allocated per message. A view reused is the same memory a new one would be, so it aliases nothing
// more than the array already does.

/** Views kept per array: a store and a removal, say, alternating. */
const RECENT_VIEWS = 2;

type Viewable = Uint8Array | Uint32Array | BigUint64Array;

/** The last RECENT_VIEWS prefix views made of one array, forgotten when another array is asked for. */
export class PrefixViews<T extends Viewable> {
  private source: T | undefined;
  /** Most recent first. */
  private recent: T[] = [];

  /** `array`'s first `length` elements. */
  of(array: T, length: number): T {
    if (this.source !== array) {
      this.source = array;
      this.recent = [];
    }
    const { recent } = this;
    for (let i = 0; i < recent.length; i++) if (recent[i].length === length) return recent[i];
    const view = array.subarray(0, length) as T;
    if (recent.length === RECENT_VIEWS) recent.pop();
    recent.unshift(view);
    return view;
  }

  /** Drops the views kept (the array is being given back: they would hold it). */
  forget(): void {
    this.source = undefined;
    this.recent = [];
  }
}
