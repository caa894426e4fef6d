/**
 * Creation links, reachability and cascading loss (as aqueduct/core/creation.py; spec: the "reachable" state and
 * "cascading loss detection").
 *
 * A node stands for a locally created half (keyed by its handle) while it is not reachable or has children
 * (links from the messages it sent to the halves those messages created). Nodes outlive their halves, so a
 * later cascade finds a half that already ceased (the engine then sends ClosedChannelLost).
 * - ack of message m on sender S: if S is reachable, m's children become reachable (and recursively the acked
 *   children of those); otherwise m is remembered as acked until S becomes reachable.
 * - nack of m: m's children run cascading loss, through every level.
 * Both walks use an explicit stack, never recursion.
 * @module
 */

/** "r:n" or "u:n": a message in one of a sender's two number spaces. */
export type MsgKey = string;
export const msgKey = (reliable: boolean, n: number): MsgKey => `${reliable ? "r" : "u"}:${n}`;

export interface LinkNode {
  channel: number;
  isSender: boolean;
  reachable: boolean;
  children: Map<MsgKey, number[]>;
  acked: Set<MsgKey>;
}

export class CreationLinks {
  readonly nodes = new Map<number, LinkNode>();

  addUnreachable(id: number, channel: number, isSender: boolean): void {
    this.nodes.set(id, { channel, isSender, reachable: false, children: new Map(), acked: new Set() });
  }
  addLink(parent: number, parentChannel: number, key: MsgKey, children: number[]): void {
    let node = this.nodes.get(parent);
    if (!node) {
      node = { channel: parentChannel, isSender: true, reachable: true, children: new Map(), acked: new Set() };
      this.nodes.set(parent, node);
    }
    node.children.set(key, children);
  }
  keysIn(parent: number, reliable: boolean, first: number, stop: number): MsgKey[] {
    const node = this.nodes.get(parent);
    if (!node || node.children.size === 0) return [];
    const out: MsgKey[] = [];
    for (const key of node.children.keys()) {
      const [space, num] = key.split(":");
      const n = Number(num);
      if ((space === "r") === reliable && first <= n && n < stop) out.push(key);
    }
    return out;
  }
  private gc(id: number, node: LinkNode): void {
    if (node.reachable && node.children.size === 0) this.nodes.delete(id);
  }
  acked(parent: number, keys: MsgKey[], onReachable: (id: number) => void): void {
    const node = this.nodes.get(parent);
    if (!node) return;
    const ready: number[] = [];
    for (const key of keys) {
      const kids = node.children.get(key);
      if (!kids) continue;
      if (node.reachable) {
        node.children.delete(key);
        ready.push(...kids);
      } else {
        node.acked.add(key);
      }
    }
    this.gc(parent, node);
    this.makeReachable(ready, onReachable);
  }
  private makeReachable(stack: number[], onReachable: (id: number) => void): void {
    while (stack.length) {
      const id = stack.pop()!;
      const node = this.nodes.get(id);
      if (!node || node.reachable) continue;
      node.reachable = true;
      for (const key of node.acked) {
        stack.push(...(node.children.get(key) ?? []));
        node.children.delete(key);
      }
      node.acked.clear();
      onReachable(id);
      this.gc(id, node);
    }
  }
  nacked(parent: number, keys: MsgKey[], onLost: (id: number, node: LinkNode) => void): void {
    const node = this.nodes.get(parent);
    if (!node) return;
    const stack: number[] = [];
    for (const key of keys) {
      const kids = node.children.get(key);
      if (kids) {
        node.children.delete(key);
        node.acked.delete(key);
        stack.push(...kids);
      }
    }
    this.gc(parent, node);
    this.cascade(stack, onLost);
  }
  cascade(stack: number[], onLost: (id: number, node: LinkNode) => void): void {
    while (stack.length) {
      const id = stack.pop()!;
      const node = this.nodes.get(id);
      if (!node) continue;
      this.nodes.delete(id);
      onLost(id, node);
      for (const kids of node.children.values()) stack.push(...kids);
    }
  }
  clear(): void {
    this.nodes.clear();
  }
}
