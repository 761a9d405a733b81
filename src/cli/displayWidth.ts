/**
 * How many terminal columns a text takes, for aligning `clients list`: combining marks
 * and format characters (ZWJ, bidi marks) take none, East Asian wide and fullwidth
 * characters and emoji presented as pictures take two, everything else one. An
 * approximation of UAX #11 (terminals disagree on emoji sequences); never used to cut text.
 */
const ZERO = /[\p{Mn}\p{Me}\p{Cf}]/u;
const WIDE =
  /[\p{Emoji_Presentation}\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA000-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6\u{20000}-\u{3FFFD}]/u;

export function displayWidth(text: string): number {
  let width = 0;
  for (const ch of text) {
    if (ch.charCodeAt(0) < 0x7f) width += 1;
    else if (ZERO.test(ch)) continue;
    else width += WIDE.test(ch) ? 2 : 1;
  }
  return width;
}

/** `text` followed by spaces up to `width` columns. */
export function padToWidth(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}
