/** `->` (or `=>`) then a space at the start of a line becomes `→ `: pure, no VS Code imports. */

/**
 * The range to replace with `→` when the user has just typed a space after an ASCII
 * arrow at the start of a line (after optional indentation); undefined otherwise.
 * `lineBefore` is the line's text up to and including the space just typed.
 */
export function asciiArrowAt(lineBefore: string): { start: number; end: number } | undefined {
  const m = /^(\s*)([-=]>) $/.exec(lineBefore);
  if (!m) return undefined;
  const start = m[1].length;
  return { start, end: start + 2 };
}
