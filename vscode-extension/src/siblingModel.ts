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

export interface SiblingItem {
  label: string;
  description: string;
  detail: string;
  sibling: Sibling;
}

/** One item a sibling: `● 2/3 [a7x2] model`, its marks and request, its own text below. */
export function siblingItems(siblings: readonly Sibling[]): SiblingItem[] {
  return siblings.map((s) => {
    const bits: string[] = [];
    if (s.model) bits.push(s.model);
    if (s.request) bits.push(`one of ${s.request} from one request`);
    if (s.marks) bits.push(s.marks);
    if (s.children > 0) bits.push(`${s.children} continuation${s.children === 1 ? "" : "s"}`);
    return {
      label: `${s.current ? "$(circle-filled) " : ""}${s.index}/${s.count} [${s.label}] ${s.author}`,
      description: bits.join(" · "),
      detail: s.text.trim() ? s.text.replace(/\s+/g, " ").trim() : "(no text)",
      sibling: s,
    };
  });
}
