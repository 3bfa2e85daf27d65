/** The sibling picker's items, built from the server's `loom.siblings` answer: pure. */

export interface Sibling {
  id: string;
  localId: string;
  label: string;
  author: string;
  authorType: string;
  index: number;
  count: number;
  current: boolean;
  text: string;
  excerpt: string;
  marks: string;
  model: string | null;
  /** How many continuations the same request made, when more than one. */
  request: number | null;
  children: number;
  uri: string;
}

/** A page of `loom.siblings`' answer: at most 100 of them, how many there are, where the
 *  next page starts (null: none), and the shown one's place among all (1-based). */
export interface SiblingPage {
  siblings: Sibling[];
  total: number;
  next: number | null;
  currentIndex: number | null;
}

export interface SiblingItem {
  label: string;
  description: string;
  detail: string;
  sibling: Sibling;
}

/** One item a sibling: `● 2/3 [a7x2] model`, its marks and request, its own text below. */
export function siblingItems(siblings: readonly Sibling[]): SiblingItem[] {
  return siblings.map((s) => ({
    label: `${s.current ? "$(circle-filled) " : ""}${s.index}/${s.count} [${s.label}] ${s.author}`,
    description: siblingBits(s).join(" · "),
    detail: s.text.trim() ? s.text.replace(/\s+/g, " ").trim() : "(no text)",
    sibling: s,
  }));
}

/** What a sibling's bits say after its place: model, request, marks, continuations. */
function siblingBits(s: Sibling): string[] {
  const bits: string[] = [];
  if (s.model) bits.push(s.model);
  if (s.request) bits.push(`one of ${s.request} from one request`);
  if (s.marks) bits.push(s.marks);
  if (s.children > 0) bits.push(`${s.children} continuation${s.children === 1 ? "" : "s"}`);
  return bits;
}

/**
 * The preview of the sibling the picker is on: who wrote it, where it stands among the
 * others and whether it is the one shown, then its whole text (the picker's rows have room
 * for one line of it).
 */
export function siblingPreview(s: Sibling, current: Sibling | undefined): string {
  const head = `${s.current ? "● " : ""}${s.index}/${s.count} [${s.label}] ${s.author}`;
  const where = s.current ? "shown now" : current ? `Enter shows it in place of [${current.label}]` : "Enter shows it";
  const bits = siblingBits(s);
  const text = s.text.trim() ? s.text.replace(/^\s+/, "").replace(/\s+$/, "") : "(no text)";
  return [`${head} · ${where}`, ...(bits.length ? [bits.join(" · ")] : []), "", text, ""].join("\n");
}
