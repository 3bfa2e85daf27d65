/**
 * The tree as a picture: a webview showing the server's SVG (`loom/picture`), every node
 * a dot placed by depth and branch; clicking one opens the path through it. Zoom with the
 * buttons or Ctrl+wheel.
 */

import * as vscode from "vscode";
import type { LoomClient } from "./client";

export interface PictureResult {
  ok?: boolean;
  tree: { id: string; title: string };
  svg: string;
  nodes: Record<string, { label: string; text: string; uri: string; model: boolean; bookmarked: boolean }>;
  position: string;
}

function nonce(): string {
  let out = "";
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (let i = 0; i < 32; i++) out += chars.charAt(Math.floor(Math.random() * chars.length));
  return out;
}

/** The webview's page: the SVG, zoom buttons, and a click → `{open: nodeId}` message. */
export function pictureHtml(p: PictureResult, cspSource: string): string {
  const n = nonce();
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${cspSource} 'unsafe-inline'; script-src 'nonce-${n}';">
<style>
  body { color: var(--vscode-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family); margin: 0; }
  #bar { position: sticky; top: 0; padding: 6px 10px; background: var(--vscode-editor-background); border-bottom: 1px solid var(--vscode-panel-border); display: flex; gap: 8px; align-items: center; z-index: 1; }
  #hint { opacity: 0.8; font-size: 12px; }
  #pic { transform-origin: 0 0; padding: 8px; }
  g.node:hover circle { stroke: var(--vscode-focusBorder); stroke-width: 3; }
  button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: 2px 8px; cursor: pointer; }
</style></head>
<body>
<div id="bar"><button id="zin">+</button><button id="zout">−</button><span id="hint">${p.tree.title.replace(/</g, "&lt;")}: click a node to open its path · hover shows its text</span></div>
<div id="pic">${p.svg}</div>
<script nonce="${n}">
  const vscode = acquireVsCodeApi();
  let zoom = 1;
  const pic = document.getElementById("pic");
  const apply = () => { pic.style.transform = "scale(" + zoom + ")"; };
  document.getElementById("zin").onclick = () => { zoom = Math.min(4, zoom * 1.25); apply(); };
  document.getElementById("zout").onclick = () => { zoom = Math.max(0.2, zoom / 1.25); apply(); };
  window.addEventListener("wheel", (e) => { if (e.ctrlKey) { e.preventDefault(); zoom = Math.max(0.2, Math.min(4, zoom * (e.deltaY < 0 ? 1.1 : 0.9))); apply(); } }, { passive: false });
  document.querySelectorAll("g.node").forEach((g) => {
    g.addEventListener("click", () => vscode.postMessage({ open: g.getAttribute("data-node") }));
  });
  const here = document.querySelector('g.node[data-node="${p.position}"]');
  if (here) here.scrollIntoView({ block: "center", inline: "center" });
</script>
</body></html>`;
}

export class TreePicture {
  private panel: vscode.WebviewPanel | undefined;
  private last: PictureResult | undefined;

  private timer: NodeJS.Timeout | undefined;
  private uri: string | undefined;

  constructor(
    private readonly client: LoomClient,
    private readonly open: (uri: string) => Promise<unknown>,
  ) {
    // continuations, edits and moves anywhere redraw the picture of their tree
    client.onTreesChanged((e) => {
      if (!this.panel || !this.last || !e.trees.includes(this.last.tree.id)) return;
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.redraw();
      }, 500);
    });
  }

  /** The open picture again, in place (no focus taken). */
  private async redraw(): Promise<void> {
    if (!this.panel || !this.last) return;
    const tree = this.last.tree.id;
    const p = await this.client.request<PictureResult>("loom/picture", this.uri ? { tree, uri: this.uri } : { tree });
    if (!this.panel) return;
    this.last = p;
    this.panel.webview.html = pictureHtml(p, this.panel.webview.cspSource);
  }

  /** Show (or refresh) the picture of a tree. */
  async show(tree: string, uri?: string): Promise<void> {
    const p = await this.client.request<PictureResult>("loom/picture", uri ? { tree, uri } : { tree });
    this.last = p;
    this.uri = uri;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("loom.picture", `Tree: ${p.tree.title}`, vscode.ViewColumn.Beside, {
        enableScripts: true,
        retainContextWhenHidden: true,
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
      });
      this.panel.webview.onDidReceiveMessage((m: { open?: string }) => {
        const node = m.open ? this.last?.nodes[m.open] : undefined;
        if (node) void this.open(node.uri);
      });
    }
    this.panel.title = `Tree: ${p.tree.title}`;
    this.panel.webview.html = pictureHtml(p, this.panel.webview.cspSource);
    this.panel.reveal(vscode.ViewColumn.Beside, true);
  }
}
