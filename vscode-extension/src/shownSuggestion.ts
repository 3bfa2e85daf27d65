/**
 * Which inline suggestion VS Code shows at the end of a path document: pure.
 *
 * VS Code's stable API tells an inline-completion provider neither which item is shown
 * (Alt+] / Alt+[ cycle) nor that part of one was accepted (`handleDidPartiallyAcceptCompletionItem`
 * is still a proposed API in 1.139), so the extension follows VS Code's own rules: the
 * items come in the provider's order; a cycle moves from the one shown; the one shown stays
 * shown while the provider keeps offering it (first in the list after an edit, which VS Code
 * keeps showing); otherwise, and after the suggestion was hidden, the first is shown.
 */

/** One item the provider offered: the continuation's node (its command's argument) and text. */
export interface Offered {
  node: string;
  text: string;
}

export class ShownSuggestion {
  private items: Offered[] = [];
  /** The node of the item shown; undefined: the first. */
  private selected: string | undefined;
  private version: number | undefined;

  /** The provider answered with `items` at this document version. */
  provided(items: readonly Offered[], version: number): void {
    const current = this.shown()?.node;
    const edited = this.version !== undefined && version !== this.version;
    this.version = version;
    const kept = items.find((i) => i.node === current);
    if (!kept || (this.selected === undefined && !edited)) {
      this.selected = undefined;
      this.items = [...items];
      return;
    }
    // after an edit, VS Code keeps the suggestion it showed, first in its list
    this.items = edited ? [kept, ...items.filter((i) => i !== kept)] : [...items];
    this.selected = kept.node;
  }

  /** Alt+] (1) or Alt+[ (-1). */
  cycle(delta: number): void {
    const n = this.items.length;
    if (n === 0) return;
    const at = Math.max(0, this.items.findIndex((i) => i.node === this.selected));
    this.selected = this.items[(((at + delta) % n) + n) % n].node;
  }

  /** The suggestion was hidden (Escape): shown again, it starts from the first. */
  reset(): void {
    this.selected = undefined;
  }

  /** The item VS Code shows, if any. */
  shown(): Offered | undefined {
    return this.items.find((i) => i.node === this.selected) ?? this.items[0];
  }
}

/** The node and text of inline items as the language client gives them (the server puts
 * `{uri, node, inserted}` on each item's `loom.acceptSuggestion` command), one per text. */
export function offeredItems(items: readonly { insertText: unknown; command?: { arguments?: unknown[] } }[]): Offered[] {
  const out: Offered[] = [];
  for (const item of items) {
    const arg = item.command?.arguments?.[0] as { node?: unknown } | undefined;
    const text = typeof item.insertText === "string" ? item.insertText : (item.insertText as { value?: unknown } | undefined)?.value;
    // VS Code shows one of the items with the same text
    if (typeof arg?.node === "string" && typeof text === "string" && !out.some((o) => o.text === text)) out.push({ node: arg.node, text });
  }
  return out;
}
