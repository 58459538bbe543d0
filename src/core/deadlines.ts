// One timer for every request deadline: a list kept in deadline order, the timer armed for the earliest.

/** A node of the list; `at` is a performance.now() time. Owned by the list while linked. */
export class Deadline {
  prev: Deadline | undefined;
  next: Deadline | undefined;
  linked = false;
  constructor(
    readonly at: number,
    readonly onExpired: () => void,
  ) {}
}

/**
 * Why not one setTimeout per request: each costs a timer object, an insertion into Node's timer
 * lists and a clearTimeout, and at thousands of messages a second that is a visible share of the
 * bridge's CPU. Deadlines here are `now + the same --request-timeout`, so a new one almost always
 * goes last: adding and removing are O(1) (a doubly linked list), and the one timer is re-armed
 * only when it fires or when a deadline earlier than the one it waits for is added.
 */
export class DeadlineList {
  #head: Deadline | undefined;
  #tail: Deadline | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The deadline the timer was armed for. */
  #armedAt = 0;

  /** Adds a deadline `delayMs` from now; `onExpired` runs once when it passes unless removed first. */
  add(delayMs: number, onExpired: () => void): Deadline {
    const deadline = new Deadline(performance.now() + delayMs, onExpired);
    // From the tail back to the first node due no later: the common case stops at once.
    let after = this.#tail;
    while (after !== undefined && after.at > deadline.at) after = after.prev;
    this.#link(deadline, after);
    if (this.#timer === undefined || deadline.at < this.#armedAt) this.#arm(deadline.at, delayMs);
    return deadline;
  }

  /** Forgets a deadline (its request was answered); the timer is left as it is and re-armed when it fires. */
  remove(deadline: Deadline): void {
    if (!deadline.linked) return;
    deadline.linked = false;
    if (deadline.prev === undefined) this.#head = deadline.next;
    else deadline.prev.next = deadline.next;
    if (deadline.next === undefined) this.#tail = deadline.prev;
    else deadline.next.prev = deadline.prev;
    deadline.prev = undefined;
    deadline.next = undefined;
  }

  #link(deadline: Deadline, after: Deadline | undefined): void {
    deadline.linked = true;
    deadline.prev = after;
    deadline.next = after === undefined ? this.#head : after.next;
    if (after === undefined) this.#head = deadline;
    else after.next = deadline;
    if (deadline.next === undefined) this.#tail = deadline;
    else deadline.next.prev = deadline;
  }

  #arm(at: number, delayMs: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedAt = at;
    this.#timer = setTimeout(() => this.#fire(), Math.max(1, Math.ceil(delayMs)));
    // The deadlines alone must not keep the process alive after everything else is done.
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    // The timer fired for #armedAt: that much time has passed even where performance.now() lags
    // the timer clock by a fraction of a millisecond.
    const now = Math.max(performance.now(), this.#armedAt);
    const expired: Deadline[] = [];
    while (this.#head !== undefined && this.#head.at <= now) {
      const deadline = this.#head;
      this.remove(deadline);
      expired.push(deadline);
    }
    if (this.#head !== undefined) this.#arm(this.#head.at, this.#head.at - now);
    for (const deadline of expired) deadline.onExpired();
  }
}
