/** Fifo is a first-in first-out list (of keys, by default) with amortised O(1) push and shift. */
export class Fifo<T = string> implements Iterable<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(key: T): void {
    this.items.push(key);
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const key = this.items[this.head++];
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return key;
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i];
  }
}
