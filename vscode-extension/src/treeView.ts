/** The Loom view: trees → the current path → each path node's siblings and children. */

import * as vscode from "vscode";
import type { LoomClient } from "./client";
import { Methods, type NodeInfo, type TreeSummary } from "./protocol";
import { branchItems, messageItem, moreItems, pathItems, treeItem, type ItemData } from "./treeModel";

export const OPEN_NODE_COMMAND = "loom.ui.openNode";

export class LoomTreeProvider implements vscode.TreeDataProvider<ItemData>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<ItemData | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private timer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [this.emitter];
  private readonly parents = new Map<string, ItemData | undefined>();

  constructor(private readonly client: LoomClient) {
    this.disposables.push(
      client.onDocumentChanged(() => {
        this.refreshSoon();
      }),
      client.onStatus((s) => {
        // a move or a finished generation: name the new node at once, not seconds later
        if (!s.generating) this.refreshSoon(50);
      }),
      client.onState(() => {
        this.refreshSoon();
      }),
      // a tree made or changed elsewhere (the CLI, another editor) shows without Refresh
      client.onTreesChanged(() => {
        this.refreshSoon();
      }),
    );
  }

  refresh(): void {
    this.emitter.fire(undefined);
  }

  /** Coalesce bursts (streamed generation, several documents changing at once). */
  refreshSoon(delayMs = 750): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refresh();
    }, delayMs);
  }

  getTreeItem(d: ItemData): vscode.TreeItem {
    const state = !d.collapsible
      ? vscode.TreeItemCollapsibleState.None
      : d.expanded
        ? vscode.TreeItemCollapsibleState.Expanded
        : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(d.label, state);
    item.id = d.id;
    item.description = d.description;
    item.tooltip = d.tooltip || undefined;
    item.iconPath = new vscode.ThemeIcon(d.icon);
    item.contextValue = d.contextValue;
    if (d.uri) {
      item.resourceUri = undefined;
      item.command = { command: OPEN_NODE_COMMAND, title: "Open", arguments: [d.uri] };
    }
    return item;
  }

  getParent(d: ItemData): ItemData | undefined {
    return this.parents.get(d.id);
  }

  async getChildren(parent?: ItemData): Promise<ItemData[]> {
    const items = await this.children(parent);
    for (const i of items) this.parents.set(i.id, parent);
    return items;
  }

  private async children(parent?: ItemData): Promise<ItemData[]> {
    if (!parent) {
      const c = await this.client.ready();
      if (!c) return [messageItem("server", "Loom server not running", this.client.lastError ?? "")];
      const trees = await this.client.request<TreeSummary[]>(Methods.trees, {});
      return trees.map((t, i) => ({ ...treeItem(t), expanded: trees.length === 1 || i === 0 }));
    }
    try {
      if (parent.role === "tree" && parent.tree) {
        // the path only (limit 0): its siblings and children are asked for when a path node expands
        const info = await this.client.request<NodeInfo>(Methods.nodeInfo, { tree: parent.tree, limit: 0 });
        return pathItems(info);
      }
      if (parent.role === "path" && parent.tree && parent.node) {
        const info = await this.client.request<NodeInfo>(Methods.nodeInfo, { tree: parent.tree, node: parent.node.localId });
        return branchItems(info, parent.id);
      }
      if (parent.role === "more" && parent.tree && parent.node && parent.more) {
        const { kind, offset } = parent.more;
        const page = kind === "siblings" ? { siblingsOffset: offset, limit: 100, childrenOffset: 0 } : { childrenOffset: offset, limit: 100, siblingsOffset: 0 };
        const info = await this.client.request<NodeInfo>(Methods.nodeInfo, { tree: parent.tree, node: parent.node.localId, ...page });
        return moreItems(info, kind, parent.id);
      }
    } catch (err) {
      return [messageItem(`${parent.id}:error`, "✗ " + (err instanceof Error ? err.message : String(err)))];
    }
    return [];
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}
